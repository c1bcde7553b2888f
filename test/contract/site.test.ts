/**
 * The site resources (release 3.1.0): banners (§2.3, `PUT /banners/order` of §4.3,
 * `banner_type_unavailable`), navigation items, and the settings groups (§2.3, §4.3,
 * open-points "Settings groups"). The rules every described resource shares are in
 * resources.test.ts; these are the rules of these resources.
 */
import { createHash } from "node:crypto"
import { expect, it } from "vitest"
import { eachStore, type Harness } from "../support/harness.js"
import { expectError } from "../support/expect.js"

const api = (h: Harness, secret = h.live) => ({
  get: (path: string) => h.request("GET", `/api/v3${path}`, { secret }),
  post: (path: string, json: unknown) => h.request("POST", `/api/v3${path}`, { secret, json }),
  put: (path: string, json: unknown) => h.request("PUT", `/api/v3${path}`, { secret, json }),
  patch: (path: string, json: unknown, headers: Record<string, string> = {}) => h.request("PATCH", `/api/v3${path}`, { secret, json, headers }),
  del: (path: string) => h.request("DELETE", `/api/v3${path}`, { secret })
})

const uploadPng = async (h: Harness, secret: string, purpose = "image") => {
  const bytes = Buffer.alloc(2048, 1)
  Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]).copy(bytes)
  const sha256 = createHash("sha256").update(bytes).digest("hex")
  const session = await h.request("POST", "/api/v3/uploads", {
    secret,
    json: { purpose, filename: "a.png", size: bytes.length, content_type: "image/png", sha256 }
  })
  await h.request("PUT", session.body.data.upload_urls[0].url, { secret, raw: bytes, headers: { "content-type": "application/octet-stream" } })
  const file = await h.request("POST", `/api/v3/uploads/${session.body.data.id}/completions`, { secret })
  return file.body.data.id as string
}

const otherAccountSecret = async (h: Harness) => {
  const other = await h.openAccount(`site-${Date.now()}-${Math.floor(Math.random() * 1000)}`)
  return other.credentials.find((c) => c.environment === "production")!.secret
}

const detailsOf = (res: { body: any }) =>
  res.body.error.details.map((d: { field: string; code: string; reason?: string }) => [d.field, d.code, d.reason ?? null])

type Banner = { id: string; name: string; position: number; status: string }

/** Every non-trashed banner, by position. */
const allBanners = async (h: Harness): Promise<Array<Banner>> => (await api(h).get("/banners?limit=200")).body.data

eachStore("banners", (h) => {
  it("create answers every field of §2.3 with its defaults, null where empty; a new banner comes last", async () => {
    const before = (await allBanners(h())).length
    const res = await api(h()).post("/banners", { name: "Welcome" })
    expect(res.status).toBe(201)
    const banner = res.body.data
    expect(res.headers.get("location")).toBe(`/api/v3/banners/${banner.id}`)
    expect(res.headers.get("etag")).toBe(`W/"banner:${banner.id}:1"`)
    expect(banner.id).toMatch(/^bnr_[0-9A-Za-z]{9}$/)
    expect(Object.keys(banner)).toEqual([
      "object", "id", "name", "type", "status", "position", "html", "images", "link", "showcases",
      "created_at", "updated_at", "deleted", "revision"
    ])
    expect(banner).toMatchObject({
      object: "banner",
      name: "Welcome",
      type: "image",
      status: "active",
      position: before + 1,
      html: null,
      images: { desktop: null, mobile: null },
      link: { kind: "none", product_id: null, target: "_self", url: null },
      showcases: [],
      deleted: false,
      revision: "1"
    })
  })

  it("type and status are enums; html is rich text of at most 512 KiB (§8.2)", async () => {
    const html = await api(h()).post("/banners", { name: "Html", type: "html", status: "inactive", html: "<p>Hi</p>" })
    expect(html.status).toBe(201)
    expect(html.body.data).toMatchObject({ type: "html", status: "inactive", html: "<p>Hi</p>" })
    const bad = await api(h()).post("/banners", { name: "Bad", type: "video", status: "draft", html: "x".repeat(512 * 1024 + 1) })
    expectError(bad, 422, "validation_failed", { field: "type", code: "invalid_value" })
    expect(detailsOf(bad).map((d: Array<string>) => [d[0], d[1]])).toEqual([
      ["type", "invalid_value"],
      ["status", "invalid_value"],
      ["html", "too_long"]
    ])
  })

  it("images take files of purpose image of the account; another account's or another purpose is 422 on the field", async () => {
    const desktop = await uploadPng(h(), h().live)
    const created = await api(h()).post("/banners", { name: "Pictured", images: { desktop } })
    expect(created.status).toBe(201)
    expect(created.body.data.images).toEqual({ desktop, mobile: null })
    const foreign = await uploadPng(h(), await otherAccountSecret(h()))
    const refused = await api(h()).patch(`/banners/${created.body.data.id}`, { images: { desktop, mobile: foreign } })
    expectError(refused, 422, "validation_failed", { field: "images.mobile", reason: "not_found" })
    expect(detailsOf(refused)).toEqual([["images.mobile", "validation_failed", "not_found"]])
    const editor = await uploadPng(h(), h().live, "editor")
    const wrongPurpose = await api(h()).patch(`/banners/${created.body.data.id}`, { images: { desktop: editor } })
    expectError(wrongPurpose, 422, "validation_failed", { field: "images.desktop", reason: "purpose_mismatch" })
    expect(detailsOf(wrongPurpose)).toEqual([["images.desktop", "validation_failed", "purpose_mismatch"]])
    // `images` replaces both: the one left out is null.
    const replaced = await api(h()).patch(`/banners/${created.body.data.id}`, { images: { mobile: desktop } })
    expect(replaced.body.data.images).toEqual({ desktop: null, mobile: desktop })
  })

  it("a link names what its kind needs: url needs url, product needs a product of the account, none needs neither", async () => {
    const noUrl = await api(h()).post("/banners", { name: "L1", link: { kind: "url" } })
    expectError(noUrl, 422, "validation_failed", { field: "link.url", code: "required" })
    expect(detailsOf(noUrl)).toEqual([["link.url", "required", null]])
    const mismatch = await api(h()).post("/banners", { name: "L2", link: { kind: "none", url: "https://example.com" } })
    expectError(mismatch, 422, "validation_failed", { field: "link.url", reason: "kind_mismatch" })
    expect(detailsOf(mismatch)).toEqual([["link.url", "invalid_value", "kind_mismatch"]])
    const notHttp = await api(h()).post("/banners", { name: "L3", link: { kind: "url", url: "javascript:alert(1)" } })
    expectError(notHttp, 422, "validation_failed", { field: "link.url", code: "invalid_value" })
    expect(detailsOf(notHttp)).toEqual([["link.url", "invalid_value", null]])
    const unknownProduct = await api(h()).post("/banners", { name: "L4", link: { kind: "product", product_id: "prd_000000001" } })
    expectError(unknownProduct, 422, "validation_failed", { field: "link.product_id", reason: "not_found" })
    expect(detailsOf(unknownProduct)).toEqual([["link.product_id", "validation_failed", "not_found"]])
    const malformed = await api(h()).post("/banners", { name: "L5", link: { kind: "product", product_id: "shw_000000001" } })
    expectError(malformed, 422, "validation_failed", { field: "link.product_id", code: "invalid" })
    expect(detailsOf(malformed)).toEqual([["link.product_id", "invalid", null]])
    const ok = await api(h()).post("/banners", { name: "L6", link: { kind: "url", url: "https://example.com/sale", target: "_blank" } })
    expect(ok.status).toBe(201)
    expect(ok.body.data.link).toEqual({ kind: "url", product_id: null, target: "_blank", url: "https://example.com/sale" })
    // `link` replaces the whole link: target goes back to its default.
    const none = await api(h()).patch(`/banners/${ok.body.data.id}`, { link: { kind: "none" } })
    expect(none.body.data.link).toEqual({ kind: "none", product_id: null, target: "_self", url: null })
  })

  it("a link to a product of the account is accepted", async () => {
    const showcase = (await api(h()).post("/showcases", { name: "For products" })).body.data
    const product = await api(h()).post("/products", { format: "course", name: "Course", showcase_id: showcase.id })
    expect(product.status).toBe(201)
    const res = await api(h()).post("/banners", { name: "To product", link: { kind: "product", product_id: product.body.data.id } })
    expect(res.status).toBe(201)
    expect(res.body.data.link).toMatchObject({ kind: "product", product_id: product.body.data.id })
  })

  it("showcases lists showcases of the account, each once: another is 422 on showcases[i] (§2.3)", async () => {
    const first = (await api(h()).post("/showcases", { name: "Front" })).body.data
    const second = (await api(h()).post("/showcases", { name: "Back" })).body.data
    const ok = await api(h()).post("/banners", { name: "Shown", showcases: [first.id, second.id] })
    expect(ok.status).toBe(201)
    expect(ok.body.data.showcases).toEqual([first.id, second.id])
    await api(h()).del(`/showcases/${second.id}`)
    const theirs = (await api(h(), h().test).post("/showcases", { name: "Sandbox" })).body.data
    const refused = await api(h()).post("/banners", { name: "Not shown", showcases: [first.id, second.id, theirs.id, first.id] })
    expectError(refused, 422, "validation_failed", { field: "showcases[1]", reason: "not_found" })
    expect(detailsOf(refused)).toEqual([
      ["showcases[1]", "validation_failed", "not_found"],
      ["showcases[2]", "validation_failed", "not_found"],
      ["showcases[3]", "invalid_value", "duplicate"]
    ])
    const malformed = await api(h()).post("/banners", { name: "Bad", showcases: ["nope"] })
    expectError(malformed, 422, "validation_failed", { field: "showcases[0]", code: "invalid" })
    expect(detailsOf(malformed)).toEqual([["showcases[0]", "invalid", null]])
    const tooMany = await api(h()).post("/banners", { name: "Many", showcases: Array.from({ length: 1001 }, () => first.id) })
    expectError(tooMany, 422, "too_many_items", { field: "showcases", code: "too_many_items" })
    expect(detailsOf(tooMany)).toEqual([["showcases", "too_many_items", null]])
    // A showcase trashed since it was added does not block other changes.
    const kept = await api(h()).patch(`/banners/${ok.body.data.id}`, { name: "Still shown" })
    expect(kept.status).toBe(200)
  })

  it("netflix banners need the netflix layout of the appearance settings: 422 banner_type_unavailable", async () => {
    const refused = await api(h()).post("/banners", { name: "Hero", type: "netflix" })
    expect(refused.status).toBe(422)
    expect(refused.body.error.code).toBe("banner_type_unavailable")
    expect(refused.body.error.details[0]).toMatchObject({ field: "type", code: "banner_type_unavailable" })
    const image = (await api(h()).post("/banners", { name: "Plain" })).body.data
    const changed = await api(h()).patch(`/banners/${image.id}`, { type: "netflix" })
    expect(changed.status).toBe(422)
    expect(changed.body.error.code).toBe("banner_type_unavailable")
    expect((await api(h()).patch("/settings/appearance", { layout: "netflix" })).status).toBe(200)
    const hero = await api(h()).post("/banners", { name: "Hero", type: "netflix" })
    expect(hero.status).toBe(201)
    expect((await api(h()).patch(`/banners/${image.id}`, { type: "netflix" })).status).toBe(200)
    // Back to the default layout: existing netflix banners stay and can still be edited.
    expect((await api(h()).patch("/settings/appearance", { layout: null })).body.data.layout).toBe("standard")
    expect((await api(h()).patch(`/banners/${hero.body.data.id}`, { name: "Hero 2" })).status).toBe(200)
  })

  it("PUT /banners/order takes every non-trashed banner once and answers them all in the new order (§4.3)", async () => {
    await api(h()).post("/banners", { name: "Inactive one", status: "inactive" })
    const current = await allBanners(h())
    expect(current.map((b) => b.position)).toEqual(current.map((_, i) => i + 1))
    const reversed = [...current].reverse().map((b) => b.id)
    const res = await api(h()).put("/banners/order", { ids: reversed })
    expect(res.status).toBe(200)
    expect(res.body.data.map((b: Banner) => b.id)).toEqual(reversed)
    expect(res.body.data.map((b: Banner) => b.position)).toEqual(reversed.map((_, i) => i + 1))
    expect(res.body.page).toEqual({ limit: reversed.length, next_cursor: null, prev_cursor: null })
    expect((await allBanners(h())).map((b) => b.id)).toEqual(reversed)
    const moved = (await api(h()).get(`/banners/${reversed[0]}`)).body.data
    expect(moved.position).toBe(1)
  })

  it("an order set that differs (missing, duplicate, unknown or trashed) is 422 order_set_mismatch and changes nothing", async () => {
    const trashed = (await api(h()).post("/banners", { name: "Trashed" })).body.data
    await api(h()).del(`/banners/${trashed.id}`)
    const ids = (await allBanners(h())).map((b) => b.id)
    const swapped = [ids[1]!, ids[0]!, ...ids.slice(2)]
    const cases: Array<[Array<string>, Array<[string, string]>]> = [
      [swapped.slice(1), [["ids", "missing"]]],
      [[...swapped, swapped[0]!], [[`ids[${swapped.length}]`, "duplicate"]]],
      [[...swapped, trashed.id], [[`ids[${swapped.length}]`, "not_in_set"]]],
      [[...swapped.slice(1), "bnr_000000001"], [[`ids[${swapped.length - 1}]`, "not_in_set"], ["ids", "missing"]]]
    ]
    for (const [body, expected] of cases) {
      const res = await api(h()).put("/banners/order", { ids: body })
      expect(res.status).toBe(422)
      expect(res.body.error.code).toBe("order_set_mismatch")
      expect(res.body.error.details.map((d: { field: string; reason: string }) => [d.field, d.reason])).toEqual(expected)
    }
    expect((await allBanners(h())).map((b) => b.id)).toEqual(ids)
    const malformed = await api(h()).put("/banners/order", { ids: ["x"] })
    expectError(malformed, 422, "validation_failed", { field: "ids[0]", code: "invalid" })
    expect(detailsOf(malformed)).toEqual([["ids[0]", "invalid", null]])
  })

  it("positions stay 1..n: the banners after a trashed one move up, a restored one comes last", async () => {
    const before = await allBanners(h())
    const victim = before[1]!
    await api(h()).del(`/banners/${victim.id}`)
    const after = await allBanners(h())
    expect(after.map((b) => b.id)).toEqual(before.filter((b) => b.id !== victim.id).map((b) => b.id))
    expect(after.map((b) => b.position)).toEqual(after.map((_, i) => i + 1))
    const restored = await api(h()).patch(`/banners/${victim.id}`, { deleted: false })
    expect(restored.status).toBe(200)
    expect(restored.body.data.position).toBe(before.length)
    const trash = await api(h()).get("/banners?deleted=true&limit=200")
    expect(trash.body.data.map((b: Banner) => b.id)).not.toContain(victim.id)
  })

  it("lists sort by position by default, and filter by type and status", async () => {
    const byPosition = await allBanners(h())
    expect(byPosition.map((b) => b.position)).toEqual([...byPosition.map((b) => b.position)].sort((a, b) => a - b))
    const html = await api(h()).get("/banners?type=html&limit=200")
    expect(html.body.data.length).toBeGreaterThan(0)
    expect(html.body.data.every((b: { type: string }) => b.type === "html")).toBe(true)
    const inactive = await api(h()).get("/banners?status=inactive&limit=200")
    expect(inactive.body.data.every((b: Banner) => b.status === "inactive")).toBe(true)
    expectError(await api(h()).get("/banners?type=video"), 422, "validation_failed", { parameter: "type" })
  })

  it("a replicated banner is read-only except status, and keeps its place in the order (3.3.0)", async () => {
    const banner = (await api(h()).post("/banners", { name: "Copied" })).body.data
    await h().patchRecord({ accountId: h().account.account.id, environment: "production" }, "banner", banner.id, {
      replica_of: { account_id: "acc_000000001", environment: "production", id: "bnr_000000001" }
    })
    const renamed = await api(h()).patch(`/banners/${banner.id}`, { name: "Renamed" })
    expect(renamed.status).toBe(403)
    expect(renamed.body.error.code).toBe("replica_readonly")
    expect((await api(h()).patch(`/banners/${banner.id}`, { status: "inactive" })).body.data.status).toBe("inactive")
    expectError(await api(h()).del(`/banners/${banner.id}`), 403, "replica_readonly")
    const ids = (await allBanners(h())).map((b) => b.id).reverse()
    expect((await api(h()).put("/banners/order", { ids })).status).toBe(200)
  })

  it("reorders and changes leave their audit entries; reading the order needs no more than banners.read", async () => {
    const ids = (await allBanners(h())).map((b) => b.id)
    const swapped = [ids[1]!, ids[0]!, ...ids.slice(2)]
    const res = await api(h()).put("/banners/order", { ids: swapped })
    const entries = await api(h()).get(`/audit-entries?request_id=${res.headers.get("x-request-id")}&limit=200`)
    expect(entries.body.data.map((e: { action: string; resource_id: string }) => [e.action, e.resource_id]).sort()).toEqual(
      [["banner.reordered", ids[0]], ["banner.reordered", ids[1]]].sort()
    )
    const readOnly = (await api(h()).post("/credentials", { name: "ro", policies: [{ template: "read_only" }] })).body.data.secret.value
    expect((await api(h(), readOnly).get("/banners")).status).toBe(200)
    const denied = await api(h(), readOnly).put("/banners/order", { ids: swapped })
    expect(denied.status).toBe(403)
    expect(denied.body.error.code).toBe("permission_denied")
  })
})

type NavItem = { id: string; label: string; position: number; parent_id: string | null }

eachStore("navigation", (h) => {
  const labels = async (parent: string) =>
    (await api(h()).get(`/navigation?parent_id=${parent}&limit=200`)).body.data.map((i: NavItem) => [i.label, i.position])

  it("create answers every field with its defaults; a new item comes last among its siblings", async () => {
    const res = await api(h()).post("/navigation", { label: "Home", url: "/" })
    expect(res.status).toBe(201)
    const item = res.body.data
    expect(item.id).toMatch(/^nav_[0-9A-Za-z]{9}$/)
    expect(res.headers.get("location")).toBe(`/api/v3/navigation/${item.id}`)
    expect(Object.keys(item)).toEqual(["object", "id", "label", "url", "product_id", "parent_id", "position", "visible", "created_at", "updated_at", "revision"])
    expect(item).toMatchObject({ object: "navigation_item", label: "Home", url: "/", product_id: null, parent_id: null, position: 1, visible: true, revision: "1" })
    const second = await api(h()).post("/navigation", { label: "Courses", url: "https://example.com/courses", visible: false })
    expect(second.body.data).toMatchObject({ position: 2, visible: false })
  })

  it("position is 1-based among siblings: inserting shifts the others, a value above the count places it last", async () => {
    const parent = (await api(h()).post("/navigation", { label: "Menu" })).body.data
    await api(h()).post("/navigation", { label: "b", parent_id: parent.id })
    await api(h()).post("/navigation", { label: "c", parent_id: parent.id })
    await api(h()).post("/navigation", { label: "a", parent_id: parent.id, position: 1 })
    const last = await api(h()).post("/navigation", { label: "z", parent_id: parent.id, position: 99 })
    expect(last.body.data.position).toBe(4)
    expect(await labels(parent.id)).toEqual([["a", 1], ["b", 2], ["c", 3], ["z", 4]])
    const moved = await api(h()).patch(`/navigation/${last.body.data.id}`, { position: 2 })
    expect(moved.body.data.position).toBe(2)
    expect(await labels(parent.id)).toEqual([["a", 1], ["z", 2], ["b", 3], ["c", 4]])
    const zero = await api(h()).post("/navigation", { label: "bad", position: 0 })
    expectError(zero, 422, "validation_failed", { field: "position", code: "out_of_range" })
    expect(detailsOf(zero)).toEqual([["position", "out_of_range", null]])
  })

  it("a menu is one level deep: 422 hierarchy_violation for a nested parent, a parent with children, or itself", async () => {
    const top = (await api(h()).post("/navigation", { label: "Top" })).body.data
    const child = (await api(h()).post("/navigation", { label: "Child", parent_id: top.id })).body.data
    expect(child.parent_id).toBe(top.id)
    const grandchild = await api(h()).post("/navigation", { label: "Grandchild", parent_id: child.id })
    expect(grandchild.status).toBe(422)
    expect(grandchild.body.error.code).toBe("hierarchy_violation")
    expect(detailsOf(grandchild)).toEqual([["parent_id", "hierarchy_violation", "parent_is_nested"]])
    const other = (await api(h()).post("/navigation", { label: "Other" })).body.data
    const withChildren = await api(h()).patch(`/navigation/${top.id}`, { parent_id: other.id })
    expectError(withChildren, 422, "hierarchy_violation", { field: "parent_id", reason: "has_children" })
    expect(detailsOf(withChildren)).toEqual([["parent_id", "hierarchy_violation", "has_children"]])
    const itself = await api(h()).patch(`/navigation/${other.id}`, { parent_id: other.id })
    expectError(itself, 422, "hierarchy_violation", { field: "parent_id", reason: "self" })
    expect(detailsOf(itself)).toEqual([["parent_id", "hierarchy_violation", "self"]])
    const unknown = await api(h()).post("/navigation", { label: "Orphan", parent_id: "nav_000000001" })
    expectError(unknown, 422, "validation_failed", { field: "parent_id", reason: "not_found" })
    expect(detailsOf(unknown)).toEqual([["parent_id", "validation_failed", "not_found"]])
  })

  it("an item leads to a URL or a product, not both; the URL is http(s) or a path; the product is of the account", async () => {
    const both = await api(h()).post("/navigation", { label: "Both", url: "/x", product_id: "prd_000000001" })
    expectError(both, 422, "validation_failed", { field: "product_id", reason: "url_and_product_id" })
    expect(detailsOf(both)).toEqual([["product_id", "invalid_value", "url_and_product_id"]])
    const script = await api(h()).post("/navigation", { label: "Script", url: "javascript:alert(1)" })
    expectError(script, 422, "validation_failed", { field: "url", code: "invalid_value" })
    expect(detailsOf(script)).toEqual([["url", "invalid_value", null]])
    const unknown = await api(h()).post("/navigation", { label: "Product", product_id: "prd_000000001" })
    expectError(unknown, 422, "validation_failed", { field: "product_id", reason: "not_found" })
    expect(detailsOf(unknown)).toEqual([["product_id", "validation_failed", "not_found"]])
  })

  it("moving under another parent places the item last there and closes the gap it leaves", async () => {
    const from = (await api(h()).post("/navigation", { label: "From" })).body.data
    const to = (await api(h()).post("/navigation", { label: "To" })).body.data
    const one = (await api(h()).post("/navigation", { label: "1", parent_id: from.id })).body.data
    await api(h()).post("/navigation", { label: "2", parent_id: from.id })
    await api(h()).post("/navigation", { label: "x", parent_id: to.id })
    const moved = await api(h()).patch(`/navigation/${one.id}`, { parent_id: to.id })
    expect(moved.status).toBe(200)
    expect(moved.body.data).toMatchObject({ parent_id: to.id, position: 2 })
    expect(await labels(from.id)).toEqual([["2", 1]])
    expect(await labels(to.id)).toEqual([["x", 1], ["1", 2]])
    const toTop = await api(h()).patch(`/navigation/${one.id}`, { parent_id: null, position: 1 })
    expect(toTop.body.data).toMatchObject({ parent_id: null, position: 1 })
    expect((await labels("none"))[0]).toEqual(["1", 1])
  })

  it("DELETE removes the item and the items under it (204); its siblings close the gap", async () => {
    const parent = (await api(h()).post("/navigation", { label: "Doomed" })).body.data
    const child = (await api(h()).post("/navigation", { label: "Doomed child", parent_id: parent.id })).body.data
    const top = await labels("none")
    const res = await api(h()).del(`/navigation/${parent.id}`)
    expect(res.status).toBe(204)
    expectError(await api(h()).get(`/navigation/${parent.id}`), 404, "not_found")
    expectError(await api(h()).get(`/navigation/${child.id}`), 404, "not_found")
    const after = await labels("none")
    expect(after.length).toBe(top.length - 1)
    expect(after.map((pair: [string, number]) => pair[1])).toEqual(after.map((_: unknown, i: number) => i + 1))
    const entries = await api(h()).get(`/audit-entries?request_id=${res.headers.get("x-request-id")}&limit=200`)
    expect(entries.body.data.map((e: { action: string; resource_id: string }) => [e.action, e.resource_id])).toEqual(
      expect.arrayContaining([["navigation_item.deleted", parent.id], ["navigation_item.deleted", child.id]])
    )
  })

  it("parent_id filters the list: an item's children, or none for the top level", async () => {
    const bad = await api(h()).get("/navigation?parent_id=shw_000000001")
    expectError(bad, 422, "validation_failed", { parameter: "parent_id" })
    const top = (await api(h()).get("/navigation?parent_id=none&limit=200")).body.data
    expect(top.length).toBeGreaterThan(0)
    expect(top.every((i: NavItem) => i.parent_id === null)).toBe(true)
  })
})

const groups = [
  { path: "/settings/sharing", group: "sharing", fields: ["title", "description", "image", "propagation", "replica"] },
  {
    path: "/settings/support/questions",
    group: "lesson_questions",
    fields: ["enabled", "moderation_enabled", "open_in_new_tab", "min_length", "placeholder", "title", "sort"]
  },
  { path: "/settings/security", group: "security", fields: ["two_factor_required", "session_timeout_minutes", "allowed_ip_ranges", "password_min_length"] },
  { path: "/settings/email", group: "email", fields: ["sender_name", "reply_to", "footer"] },
  { path: "/settings/appearance", group: "appearance", fields: ["layout", "primary_color", "logo", "favicon"] }
]

eachStore("settings groups", (h) => {
  it("a group never written answers its defaults at revision \"0\", with every field and its ETag", async () => {
    // The sandbox environment of the account: nothing in it is written by the other tests.
    for (const { path, group, fields } of groups) {
      const res = await api(h(), h().test).get(path)
      expect(res.status).toBe(200)
      expect(Object.keys(res.body.data)).toEqual(["object", "id", "group", ...fields, "defaults", "updated_at", "revision"])
      expect(res.body.data).toMatchObject({ object: "settings", id: group, group, updated_at: null, revision: "0" })
      expect(res.headers.get("etag")).toBe(`W/"settings:${group}:0"`)
    }
    const sharing = (await api(h(), h().test).get("/settings/sharing")).body.data
    expect(sharing).toMatchObject({
      title: h().account.account.name,
      description: null,
      image: null,
      propagation: { replicas: false },
      replica: null,
      defaults: { title: h().account.account.name, description: null, image: null }
    })
    const questions = (await api(h(), h().test).get("/settings/support/questions")).body.data
    expect(questions).toMatchObject({ enabled: true, moderation_enabled: false, open_in_new_tab: false, min_length: 0, sort: "newest" })
  })

  it("PATCH changes only the fields sent and answers the new revision and ETag (§4.3)", async () => {
    const res = await api(h()).patch("/settings/sharing", { title: "My school", description: "Learn things" })
    expect(res.status).toBe(200)
    expect(res.body.data).toMatchObject({ title: "My school", description: "Learn things", image: null, revision: "1" })
    expect(res.headers.get("etag")).toBe(`W/"settings:sharing:1"`)
    const again = await api(h()).patch("/settings/sharing", { description: "Learn more" })
    expect(again.body.data).toMatchObject({ title: "My school", description: "Learn more", revision: "2" })
    const read = await api(h()).get("/settings/sharing")
    expect(read.body.data).toEqual(again.body.data)
    expect(read.headers.get("etag")).toBe(`W/"settings:sharing:2"`)
  })

  it("null restores a field's default (§4.3)", async () => {
    await api(h()).patch("/settings/sharing", { title: "Renamed", description: "Text" })
    const res = await api(h()).patch("/settings/sharing", { title: null, description: null })
    expect(res.body.data).toMatchObject({ title: h().account.account.name, description: null })
    await api(h()).patch("/settings/support/questions", { min_length: 20, sort: "oldest", enabled: false })
    const restored = await api(h()).patch("/settings/support/questions", { min_length: null, sort: null })
    expect(restored.body.data).toMatchObject({ min_length: 0, sort: "newest", enabled: false })
  })

  it("If-Match: a stale revision is 412 revision_mismatch and nothing is saved; the current one applies", async () => {
    const current = await api(h()).get("/settings/email")
    const etag = current.headers.get("etag")!
    const applied = await api(h()).patch("/settings/email", { footer: "Bye" }, { "if-match": etag })
    expect(applied.status).toBe(200)
    const stale = await api(h()).patch("/settings/email", { footer: "Stale" }, { "if-match": etag })
    expect(stale.status).toBe(412)
    expect(stale.body.error.code).toBe("revision_mismatch")
    expect((await api(h()).get("/settings/email")).body.data.footer).toBe("Bye")
    const otherType = await api(h()).patch("/settings/email", { footer: "x" }, { "if-match": `W/"banner:bnr_000000001:1"` })
    expectError(otherType, 412, "revision_mismatch")
  })

  it("each group keeps its own revision", async () => {
    const security = (await api(h()).get("/settings/security")).body.data.revision
    const appearance = await api(h()).patch("/settings/appearance", { primary_color: "#112233" })
    expect(appearance.status).toBe(200)
    expect((await api(h()).get("/settings/security")).body.data.revision).toBe(security)
    const changed = await api(h()).patch("/settings/security", { two_factor_required: true, allowed_ip_ranges: ["203.0.113.0/24", "2001:db8::/32"] })
    expect(changed.body.data).toMatchObject({ two_factor_required: true, allowed_ip_ranges: ["203.0.113.0/24", "2001:db8::/32"] })
    expect(changed.body.data.revision).toBe(String(Number(security) + 1))
  })

  it("sharing image takes a file ID of the account and answers { file_id, url }; another account's file is 422 on image", async () => {
    const own = await uploadPng(h(), h().live)
    const res = await api(h()).patch("/settings/sharing", { image: own })
    expect(res.status).toBe(200)
    expect(res.body.data.image).toEqual({ file_id: own, url: `/api/v3/files/${own}` })
    const foreign = await uploadPng(h(), await otherAccountSecret(h()))
    const refused = await api(h()).patch("/settings/sharing", { image: foreign })
    expectError(refused, 422, "validation_failed", { field: "image", reason: "not_found" })
    expect(detailsOf(refused)).toEqual([["image", "validation_failed", "not_found"]])
    expect((await api(h()).get("/settings/sharing")).body.data.image.file_id).toBe(own)
    const cleared = await api(h()).patch("/settings/sharing", { image: null })
    expect(cleared.body.data.image).toBeNull()
  })

  it("bodies are strict and values checked: 422 itemized, nothing saved", async () => {
    const before = (await api(h()).get("/settings/support/questions")).body.data
    const bad = await api(h()).patch("/settings/support/questions", { min_length: -1, sort: "random", enabled: "yes" })
    expectError(bad, 422, "validation_failed", { field: "min_length", code: "out_of_range" })
    expect(detailsOf(bad).map((d: Array<string>) => [d[0], d[1]])).toEqual([
      ["enabled", "invalid_type"],
      ["min_length", "out_of_range"],
      ["sort", "invalid_value"]
    ])
    const unknown = await api(h()).patch("/settings/sharing", { revision: "9", propagation: { replicas: true } })
    expect(unknown.status).toBe(422)
    expect(unknown.body.error.code).toBe("unknown_field")
    const appearance = await api(h()).patch("/settings/appearance", { primary_color: "blue", layout: "grid" })
    expectError(appearance, 422, "validation_failed", { field: "layout" })
    expect(detailsOf(appearance).map((d: Array<string>) => d[0])).toEqual(["layout", "primary_color"])
    const email = await api(h()).patch("/settings/email", { reply_to: "nobody" })
    expectError(email, 422, "validation_failed", { field: "reply_to", code: "invalid_value" })
    expect(detailsOf(email).map((d: Array<string>) => [d[0], d[1]])).toEqual([["reply_to", "invalid_value"]])
    const security = await api(h()).patch("/settings/security", { allowed_ip_ranges: ["10.0.0.0/33"], session_timeout_minutes: 1 })
    expectError(security, 422, "validation_failed", { field: "allowed_ip_ranges[0]" })
    expect(detailsOf(security).map((d: Array<string>) => d[0])).toEqual(["session_timeout_minutes", "allowed_ip_ranges[0]"])
    expect((await api(h()).get("/settings/support/questions")).body.data).toEqual(before)
  })

  it("every change leaves its audit entry settings.updated on the group", async () => {
    const res = await api(h()).patch("/settings/support/questions", { placeholder: "Ask away" })
    const entries = await api(h()).get(`/audit-entries?request_id=${res.headers.get("x-request-id")}`)
    expect(entries.body.data.map((e: { action: string; resource_type: string; resource_id: string }) => [e.action, e.resource_type, e.resource_id])).toEqual([
      ["settings.updated", "settings", "lesson_questions"]
    ])
  })

  it("a read-only credential reads settings but does not change them (403)", async () => {
    const readOnly = (await api(h()).post("/credentials", { name: "ro", policies: [{ template: "read_only" }] })).body.data.secret.value
    expect((await api(h(), readOnly).get("/settings/appearance")).status).toBe(200)
    const denied = await api(h(), readOnly).patch("/settings/appearance", { layout: "netflix" })
    expect(denied.status).toBe(403)
    expect(denied.body.error.code).toBe("permission_denied")
  })

  it("sharing settings copied from another account are read-only: 403 replica_readonly", async () => {
    await api(h()).patch("/settings/sharing", { title: "Before replication" })
    await h().patchRecord({ accountId: h().account.account.id, environment: "production" }, "settings", "sharing", {
      replica: { account_id: "acc_000000001", environment: "production" }
    })
    const read = await api(h()).get("/settings/sharing")
    expect(read.body.data.replica).toEqual({ account_id: "acc_000000001", environment: "production" })
    const res = await api(h()).patch("/settings/sharing", { title: "After" })
    expect(res.status).toBe(403)
    expect(res.body.error.code).toBe("replica_readonly")
  })
})

eachStore("settings ETags name their group", (h) => {
  it("an ETag of another settings group at the same revision is 412 revision_mismatch", async () => {
    const sharing = await h().request("GET", "/api/v3/settings/sharing", { secret: h().live })
    const etag = sharing.headers.get("etag")!
    const foreign = etag.replace("settings:sharing:", "settings:email:")
    const res = await h().request("PATCH", "/api/v3/settings/sharing", { secret: h().live, json: { title: "T" }, headers: { "if-match": foreign } })
    expect(res.status).toBe(412)
    expect(res.body.error.code).toBe("revision_mismatch")
    const ok = await h().request("PATCH", "/api/v3/settings/sharing", { secret: h().live, json: { title: "T" }, headers: { "if-match": etag } })
    expect(ok.status).toBe(200)
  })
})
