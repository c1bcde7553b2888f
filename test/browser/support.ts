/**
 * What the browser tests share: Debian's Chromium (a test tool's own browser download is not
 * possible here), driven by playwright-core, beside a memory harness; and where screenshots go
 * (`UPDATE_SCREENSHOTS=1` writes them to docs/images, otherwise to a temporary directory).
 */
import { chromium, type Browser } from "playwright-core"
import { existsSync, mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll } from "vitest"
import { type Harness, startHarness } from "../support/harness.js"

const CHROMIUM = process.env["CHROMIUM_PATH"] ?? "/usr/bin/chromium"

export const shots = process.env["UPDATE_SCREENSHOTS"]
  ? new URL("../../docs/images/", import.meta.url).pathname
  : `${mkdtempSync(join(tmpdir(), "syllabus-shots-"))}/`

/** A memory harness and a headless Chromium for the enclosing `describe`, closed after it. */
export const useBrowser = (): (() => { readonly h: Harness; readonly browser: Browser }) => {
  let h: Harness | undefined
  let browser: Browser | undefined
  beforeAll(async () => {
    if (!existsSync(CHROMIUM)) throw new Error(`Chromium is needed at ${CHROMIUM} (.ci/run installs Debian's package)`)
    h = await startHarness("memory")
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"]
    })
  }, 60_000)
  afterAll(async () => {
    await browser?.close()
    await h?.close()
  })
  return () => {
    if (!h || !browser) throw new Error("the browser is not started yet")
    return { h, browser }
  }
}
