/**
 * Human mode end to end in a real browser (issue 6): headless Chromium (Debian's package,
 * driven by playwright-core) goes through the sign-in pages while the command-line client
 * waits on its loopback callback; then the client calls the API in human mode. The pages'
 * screenshots (docs/human-mode.md) are taken here: `UPDATE_SCREENSHOTS=1` writes them to docs/images.
 */
import { describe, expect, it } from "vitest"
import { enrollTotp, totpCode, user } from "../../packages/cli/test/support.js"
import { shots, useBrowser } from "./support.js"

describe("human mode in a browser", () => {
  const started = useBrowser()

  it("login in the browser, then the client lists credentials as the administrator", async () => {
    const { h, browser } = started()
    const admin = h.account.administrator
    const totp = await enrollTotp(h, h.live, admin.id)
    const cli = user()
    expect(await cli.start("configure", "--base-url", h.baseUrl, "--api-key", h.live).exit).toBe(0)
    const login = cli.start("login", "--no-browser")
    const [authorizeUrl] = await login.waitForStderr(/http:\/\/127\.0\.0\.1:\d+\/oauth\/authorize\?\S+/)

    const page = await browser.newPage()
    await page.goto(authorizeUrl)
    await page.screenshot({ path: `${shots}login-1-platform.png` })
    if (await page.locator('form[action="/oauth/authorize/confirm"]').count()) {
      await page.click('form[action="/oauth/authorize/confirm"] button[type=submit]')
    } else {
      await page.fill("#platform", String(h.account.account.subdomain))
      await page.click("button[type=submit]")
      // A screenshot taken while the page navigates fails: wait for the confirm page first.
      await page.waitForSelector('form[action="/oauth/authorize/confirm"]')
      await page.screenshot({ path: `${shots}login-2-confirm.png` })
      await page.click('form[action="/oauth/authorize/confirm"] button[type=submit]')
    }
    await page.waitForSelector("#email")
    await page.screenshot({ path: `${shots}login-3-sign-in.png` })
    await page.fill("#email", String(admin.email))
    await page.fill("#password", "correct horse battery")
    await page.click("button[type=submit]")
    await page.waitForSelector("#code")
    await page.screenshot({ path: `${shots}login-4-two-factor.png` })
    await page.fill("#code", totpCode(totp, 0))
    await page.click("button[type=submit]")
    await page.waitForSelector('button[value="approve"]')
    await page.screenshot({ path: `${shots}login-5-consent.png` })
    await page.click('button[value="approve"]')
    await page.waitForURL(/^http:\/\/127\.0\.0\.1:\d+\/callback/)
    await page.waitForLoadState("load")
    await page.screenshot({ path: `${shots}login-6-done.png` })

    expect(await login.exit).toBe(0)
    const listed = cli.start("credentials", "list", "--json")
    expect(await listed.exit).toBe(0)
    expect(JSON.parse(listed.stdout()).length).toBeGreaterThan(0)
    const log = await h.request("GET", "/api/v3/requests?operation_id=credentials.list&limit=1", { secret: h.live })
    expect(log.body.data[0].administrator_id).toBe(admin.id)
  }, 60_000)
})
