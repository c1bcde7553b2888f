/**
 * The public reference at `/docs` in a real browser (issue 12): headless Chromium renders
 * the Redoc page from the server alone (every request to another host is refused and
 * counted), with the sidebar grouped by `x-tagGroups` and the operations' summaries. The
 * screenshot in docs/openapi.md is taken here: `UPDATE_SCREENSHOTS=1` writes it to docs/images.
 */
import { describe, expect, it } from "vitest"
import { shots, useBrowser } from "./support.js"

describe("the reference page in a browser", () => {
  const started = useBrowser()

  it("renders /docs offline, its sidebar grouped by area and tagged by resource", async () => {
    const { h, browser } = started()
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } })
    const elsewhere: Array<string> = []
    const origin = new URL(h.baseUrl).origin
    await page.route("**/*", (route) => {
      const url = route.request().url()
      if (url.startsWith(origin) || url.startsWith("blob:") || url.startsWith("data:")) return route.continue()
      elsewhere.push(url)
      return route.abort()
    })
    const errors: Array<string> = []
    page.on("pageerror", (error) => errors.push(error.message))
    await page.goto(`${h.baseUrl}/docs`)
    const menu = page.locator(".menu-content")
    await menu.getByText("Catalog and content", { exact: true }).waitFor({ timeout: 30_000 })
    for (const group of ["People", "Access", "Integration", "Platform"]) await expect(menu.getByText(group, { exact: true }).count()).resolves.toBeGreaterThan(0)
    for (const tag of ["Products", "Modules", "Lessons", "Webhooks", "Credentials"]) await expect(menu.getByText(tag, { exact: true }).count()).resolves.toBeGreaterThan(0)
    await menu.getByText("Products", { exact: true }).first().click()
    await menu.getByText("Publish a product and its copies in replicated accounts").first().waitFor({ timeout: 10_000 })
    await page.screenshot({ path: `${shots}docs-reference.png` })
    expect(elsewhere).toEqual([])
    expect(errors).toEqual([])
  }, 90_000)
})
