/**
 * The integrator's own small client of the Syllabus API. It takes a `fetch` so that tests can
 * hand it the in-process one of `@syllabus/testing` (or use a real URL in production).
 */
export interface ClientOptions {
  /** The API base, e.g. `https://school.example/api/v3`. */
  readonly baseUrl: string
  /** A credential secret (`sk_live_…` / `sk_test_…`). */
  readonly secret: string
  readonly fetch?: (input: string, init?: RequestInit) => Promise<Response>
}

/** A non-2xx answer, with the API's stable error code. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string
  ) {
    super(`${status} ${code}: ${message}`)
  }
}

export interface SyllabusClient {
  get(path: string): Promise<any>
  /** Every item of a collection, following `page.next_cursor`. */
  all(path: string): Promise<Array<any>>
  /** A POST with an `Idempotency-Key`: retrying with the same key creates nothing twice. */
  post(path: string, body: unknown, idempotencyKey: string): Promise<any>
}

export const syllabusClient = (options: ClientOptions): SyllabusClient => {
  const send = options.fetch ?? ((input: string, init?: RequestInit) => fetch(input, init))
  const call = async (method: string, path: string, body?: unknown, idempotencyKey?: string) => {
    const headers: Record<string, string> = { authorization: `Bearer ${options.secret}` }
    if (body !== undefined) headers["content-type"] = "application/json"
    if (idempotencyKey !== undefined) headers["idempotency-key"] = idempotencyKey
    const res = await send(`${options.baseUrl}${path}`, { method, headers, body: body === undefined ? null : JSON.stringify(body) })
    const json: any = await res.json().catch(() => undefined)
    if (!res.ok) throw new ApiError(res.status, json?.error?.code ?? "http_error", json?.error?.message ?? res.statusText)
    return json
  }
  return {
    get: async (path) => (await call("GET", path))?.data,
    all: async (path) => {
      const items: Array<any> = []
      let cursor: string | null = null
      do {
        const separator = path.includes("?") ? "&" : "?"
        const page = await call("GET", cursor === null ? path : `${path}${separator}cursor=${encodeURIComponent(cursor)}`)
        items.push(...page.data)
        cursor = page.page?.next_cursor ?? null
      } while (cursor !== null)
      return items
    },
    post: async (path, body, idempotencyKey) => (await call("POST", path, body, idempotencyKey))?.data
  }
}
