/**
 * The public reference `/docs` in a real browser (issue 26): how long until a reader can use
 * it, in headless Chromium (Debian's, as the browser tests use), each load in a fresh browser
 * context (nothing cached). See docs/openapi.md, "How quickly the reference is usable".
 *
 *   node --import tsx bench/docs-page.ts --base-url http://127.0.0.1:8080   (a running server)
 *   node --import tsx bench/docs-page.ts --base-url … --loads 10
 *
 * For each load, from the start of the navigation to `/docs`:
 * - intro: the introduction's "Authentication" heading is on screen;
 * - operations: the list of operations shows "Publish a product and its copies in replicated
 *   accounts" (the page answers input: it is clicked next);
 * - operation page: from that click until the reference shows that operation in full
 *   (its heading and its response samples);
 * and the bytes transferred for `/docs` itself and then for the operation's page. Prints each
 * load, then the median and the worst. A server from before issue 26, whose `/docs` was one
 * Redoc page of every operation, is measured too: there the intro is the page's title and the
 * operations are the sidebar's, clicked open.
 */
import { chromium, type Page } from "playwright-core"
import { loadavg } from "node:os"
import { parseArgs } from "node:util"

const { values: flags } = parseArgs({
  options: {
    "base-url": { type: "string", default: "http://127.0.0.1:8080" },
    loads: { type: "string", default: "5" },
    chromium: { type: "string", default: process.env["CHROMIUM_PATH"] ?? "/usr/bin/chromium" }
  }
})
const BASE_URL = flags["base-url"].replace(/\/+$/, "")
const LOADS = Number(flags.loads)
const OPERATION = "Publish a product and its copies in replicated accounts"
const WAIT = { state: "visible", timeout: 120_000 } as const

interface Load {
  readonly intro: number
  readonly operations: number
  readonly operationPage: number
  readonly bytes: number
  readonly pageBytes: number
}

const browser = await chromium.launch({
  executablePath: flags.chromium,
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"]
})

/** Bytes of the responses the page has received so far. */
const countBytes = (page: Page) => {
  let bytes = 0
  page.on("response", (response) => void response.body().then((body) => (bytes += body.length), () => undefined))
  return () => bytes
}

const measure = async (): Promise<Load> => {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } })
  const page = await context.newPage()
  const bytes = countBytes(page)
  const started = performance.now()
  await page.goto(`${BASE_URL}/docs`, { waitUntil: "commit" })
  const oneRedocPage = (await page.locator("redoc").count()) > 0 || (await page.content()).includes("<redoc")
  await (oneRedocPage
    ? page.getByRole("heading", { name: /^Course-platform administration API/ }).first()
    : page.getByRole("heading", { name: "Authentication", exact: true })
  ).waitFor(WAIT)
  const intro = performance.now() - started
  if (oneRedocPage) await page.locator(".menu-content").getByText("Products", { exact: true }).first().click()
  const link = (oneRedocPage ? page.locator(".menu-content") : page.locator("#reference")).getByText(OPERATION).first()
  await link.waitFor(WAIT)
  const operations = performance.now() - started
  const indexBytes = bytes()
  const clicked = performance.now()
  await link.click()
  const section = page.locator('[id$="/operation/products.publications.create"]')
  await section.getByRole("heading", { name: OPERATION }).waitFor(WAIT)
  await section.getByText("Response samples").first().waitFor(WAIT)
  const operationPage = performance.now() - clicked
  await context.close()
  return { intro, operations, operationPage, bytes: indexBytes, pageBytes: bytes() - indexBytes }
}

const startLoad = loadavg()[0]!.toFixed(2)
const loads: Array<Load> = []
for (let i = 0; i < LOADS; i++) {
  const l = await measure()
  loads.push(l)
  console.log(
    `load ${i + 1}: intro ${l.intro.toFixed(0)} ms, operations ${l.operations.toFixed(0)} ms (${(l.bytes / 1e3).toFixed(0)} kB), ` +
      `operation page ${l.operationPage.toFixed(0)} ms (${(l.pageBytes / 1e3).toFixed(0)} kB more)`
  )
}
await browser.close()

const sorted = (values: ReadonlyArray<number>) => [...values].sort((a, b) => a - b)
for (const key of ["intro", "operations", "operationPage"] as const) {
  const values = sorted(loads.map((l) => l[key]))
  console.log(`${key.padEnd(14)} median ${values[Math.floor(values.length / 2)]!.toFixed(0)} ms, worst ${values.at(-1)!.toFixed(0)} ms (${LOADS} loads)`)
}
console.log(`load average ${startLoad} at the start, ${loadavg()[0]!.toFixed(2)} at the end`)
