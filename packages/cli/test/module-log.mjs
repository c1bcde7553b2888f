// `node --import ./module-log.mjs …`: appends the URL of every module the program loads to
// the file named by MODULE_LOG, for the test of what `syllabus --help` loads.
import { register } from "node:module"

register("data:text/javascript," + encodeURIComponent(`
import { appendFileSync } from "node:fs"
export async function load(url, context, next) {
  appendFileSync(process.env.MODULE_LOG, url + "\\n")
  return next(url, context)
}`))
