/** The public events collection and its catalog (§6, open-points "Events and webhooks"). */
import { expect, it } from "vitest"
import { eachStore, type Harness } from "../support/harness.js"
import { expectError } from "../support/expect.js"

const DAY = 24 * 3600 * 1000
const get = (h: Harness, path: string, secret = h.live) => h.request("GET", `/api/v3${path}`, { secret })

eachStore("events", (h) => {
  it("every change records its event, with the resource as it was, in the envelope of open-points", async () => {
    const created = await h().request("POST", "/api/v3/showcases", { secret: h().live, json: { name: "Evented" } })
    const id = created.body.data.id
    const renamed = await h().request("PATCH", `/api/v3/showcases/${id}`, { secret: h().live, json: { name: "Renamed" } })
    await h().request("DELETE", `/api/v3/showcases/${id}`, { secret: h().live })
    const events = await get(h(), `/events?resource_id=${id}&sort=created_at`)
    expect(events.status).toBe(200)
    expect(events.body.data.map((e: { type: string }) => e.type)).toEqual(["showcase.created", "showcase.updated", "showcase.trashed"])
    const [first, second] = events.body.data
    expect(Object.keys(first)).toEqual(["object", "id", "type", "version", "created_at", "environment", "request_id", "data", "previous_attributes"])
    expect(first).toMatchObject({ object: "event", version: 1, environment: "production", request_id: created.headers.get("x-request-id") })
    // The JSON recorded when it happened, never rebuilt: the first event still has the first name.
    expect(first.data.object).toEqual(created.body.data)
    expect(first.previous_attributes).toBeNull()
    expect(second.data.object).toEqual(renamed.body.data)
    expect(second.previous_attributes).toMatchObject({ name: "Evented", revision: "1" })
    const one = await get(h(), `/events/${first.id}`)
    expect(one.body.data).toEqual(first)
  })

  it("lists newest first by default, filter by type, and page with cursors", async () => {
    for (const name of ["e1", "e2", "e3"]) await h().request("POST", "/api/v3/tags", { secret: h().live, json: { name: `${name}-${Date.now()}` } })
    const page = await get(h(), "/events?type=tag.created&limit=2")
    expect(page.body.data).toHaveLength(2)
    expect(page.body.data.every((e: { type: string }) => e.type === "tag.created")).toBe(true)
    expect(page.body.data[0].id > page.body.data[1].id).toBe(true)
    const next = await get(h(), `/events?type=tag.created&limit=2&cursor=${encodeURIComponent(page.body.page.next_cursor)}`)
    expect(next.body.data.length).toBeGreaterThanOrEqual(1)
    expect(next.body.data[0].id < page.body.data[1].id).toBe(true)
  })

  it("the sandbox's events are its own", async () => {
    const created = await h().request("POST", "/api/v3/showcases", { secret: h().test, json: { name: "Sandboxed" } })
    const live = await get(h(), `/events?resource_id=${created.body.data.id}`)
    expect(live.body.data).toEqual([])
    const sandbox = await get(h(), `/events?resource_id=${created.body.data.id}`, h().test)
    expect(sandbox.body.data[0]).toMatchObject({ type: "showcase.created", environment: "sandbox" })
  })

  it("needs events.read (403 permission_denied)", async () => {
    const none = await h().request("POST", "/api/v3/credentials", { secret: h().live, json: { name: "no events", policies: [{ capabilities: ["showcases.read"] }] } })
    const res = await get(h(), "/events", none.body.data.secret.value)
    expect(res.status).toBe(403)
    expect(res.body.error.code).toBe("permission_denied")
  })

  it("the catalog of the release lists every event type with version, visibility and payload keys", async () => {
    const res = await get(h(), "/event-types")
    expect(res.status).toBe(200)
    const created = res.body.data.find((e: { type: string }) => e.type === "showcase.created")
    expect(created).toEqual({
      object: "event_type",
      type: "showcase.created",
      version: 1,
      visibility: "public",
      resource_type: "showcase",
      payload_keys: ["object", "id", "name", "description", "status", "image", "created_at", "updated_at", "deleted", "revision"]
    })
    const types = res.body.data.map((e: { type: string }) => e.type)
    expect(types).toEqual(
      expect.arrayContaining([
        "showcase.trashed",
        "showcase.restored",
        "tag.deleted",
        "operation.completed",
        "operation.canceled",
        // The events of the resources outside the routed machinery, and of the use cases beside it.
        "user.created",
        "tag.created",
        "webhook.secret_rotated",
        "administrator.two_factor_enabled",
        "settings.updated",
        "module.reordered",
        "navigation_item.reordered"
      ])
    )
    const settings = res.body.data.find((e: { type: string }) => e.type === "settings.updated")
    expect(settings.payload_keys).toEqual(expect.arrayContaining(["object", "id", "group", "defaults", "updated_at", "revision"]))
  })
})

eachStore("events past retention", (h) => {
  it("an event is kept 30 days: then 404, and a cursor pointing at it is 410 cursor_expired (§6)", async () => {
    for (const name of ["old-1", "old-2"]) await h().request("POST", "/api/v3/tags", { secret: h().live, json: { name } })
    // Almost 30 days later, a page ends on the oldest event: the cursor points at it.
    h().advance(30 * DAY - 3600_000)
    const page = await get(h(), "/events?type=tag.created&sort=created_at&limit=1")
    const oldest = page.body.data[0].id
    const cursor = page.body.page.next_cursor as string
    expect((await get(h(), `/events/${oldest}`)).status).toBe(200)
    // Two hours on, the cursor is still fresh (24 h) but its event is no longer kept.
    h().advance(2 * 3600_000)
    expectError(await get(h(), `/events/${oldest}`), 404, "not_found")
    const expired = await get(h(), `/events?type=tag.created&sort=created_at&limit=1&cursor=${encodeURIComponent(cursor)}`)
    expect(expired.status).toBe(410)
    expect(expired.body.error.code).toBe("cursor_expired")
    await h().housekeeping()
    expect((await get(h(), `/events?type=tag.created`)).body.data).toEqual([])
  })
})
