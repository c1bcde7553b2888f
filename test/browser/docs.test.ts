/**
 * The public reference in a real browser (issues 12 and 26): headless Chromium opens `/docs`
 * from the server alone (every request to another host is refused and counted). The page is
 * the introduction and the index of the operations, with no script: it is whole as soon as
 * its HTML has arrived. A click on an operation opens its resource's Redoc page at that
 * operation, with the sidebar of that resource. How long each takes is measured by
 * `bench/docs-page.ts` (docs/openapi.md), not asserted here. The screenshots in
 * docs/openapi.md are taken here: `UPDATE_SCREENSHOTS=1` writes them to docs/images.
 */
import { describe, expect, it } from "vitest"
import { shots, useBrowser } from "./support.js"

describe("the reference in a browser", () => {
  const started = useBrowser()

  /** A page that may load only from the server, recording what it asked of other hosts and its script errors. */
  const offlinePage = async () => {
    const { h, browser } = started()
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } })
    const elsewhere: Array<string> = []
    const requested: Array<string> = []
    const origin = new URL(h.baseUrl).origin
    await page.route("**/*", (route) => {
      const url = route.request().url()
      requested.push(url)
      if (url.startsWith(origin) || url.startsWith("blob:") || url.startsWith("data:")) return route.continue()
      elsewhere.push(url)
      return route.abort()
    })
    const errors: Array<string> = []
    page.on("pageerror", (error) => errors.push(error.message))
    return { h, page, elsewhere, requested, errors }
  }

  it("shows /docs whole from its HTML alone: the introduction, then every area with its operations", async () => {
    const { h, page, elsewhere, requested, errors } = await offlinePage()
    await page.goto(`${h.baseUrl}/docs`)
    for (const heading of ["Authentication", "The two modes: API key, or an administrator signed in", "Retrying safely: idempotency keys", "Errors", "Pagination, sorting and filters", "Rate limits"]) {
      await expect(page.getByRole("heading", { name: heading, exact: true }).isVisible()).resolves.toBe(true)
    }
    const reference = page.locator("#reference")
    for (const area of ["Catalog and content", "People", "Access", "Integration", "Platform"]) await expect(reference.getByRole("heading", { name: area, exact: true }).count()).resolves.toBe(1)
    await expect(reference.getByText("Publish a product and its copies in replicated accounts").isVisible()).resolves.toBe(true)
    // Nothing but the page itself was fetched: no script to wait for.
    expect(requested).toEqual([`${h.baseUrl}/docs`])
    await page.screenshot({ path: `${shots}docs-introduction.png` })
    expect(elsewhere).toEqual([])
    expect(errors).toEqual([])
    await page.close()
  }, 90_000)

  it("opens an operation of the index on its resource's reference page, rendered offline by Redoc", async () => {
    const { h, page, elsewhere, errors } = await offlinePage()
    await page.goto(`${h.baseUrl}/docs`)
    await page.locator("#reference").getByText("Publish a product and its copies in replicated accounts").click()
    await page.waitForURL(/\/docs\/reference\/products#tag\/Products\/operation\/products\.publications\.create$/)
    const section = page.locator('[id="tag/Products/operation/products.publications.create"]')
    await section.getByRole("heading", { name: "Publish a product and its copies in replicated accounts" }).waitFor({ state: "visible", timeout: 30_000 })
    // The sidebar is that resource's: its operations, not the other resources'.
    const menu = page.locator(".menu-content")
    await menu.getByText("Products", { exact: true }).first().waitFor({ state: "visible", timeout: 30_000 })
    await expect(menu.getByText("List products").count()).resolves.toBeGreaterThan(0)
    await expect(menu.getByText("List users").count()).resolves.toBe(0)
    await page.screenshot({ path: `${shots}docs-reference.png` })
    expect(elsewhere).toEqual([])
    expect(errors).toEqual([])
    await page.close()
  }, 90_000)
})
