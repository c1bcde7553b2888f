/**
 * Embedding Syllabus behind a web-standard `fetch` handler (any runtime that speaks
 * `Request`/`Response`: a framework route, a worker, a test).
 */
import { makeFetchHandler } from "@syllabus/http"
import { MemoryStore } from "@syllabus/memory"

export const makeSyllabusFetch = () => makeFetchHandler({ store: MemoryStore })
