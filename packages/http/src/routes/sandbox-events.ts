/** `POST /sandbox/events`: a sample event on demand, for integrations under test (`syllabus trigger`). */
import { eventTypeCatalog, type RepresentationExample, triggerSandboxEvent, TriggerSandboxEventBody } from "@syllabus/core"
import { Effect } from "effect"
import { defineOperation } from "../operation.js"
import { EventSchema } from "../schemas.js"

/** `exampleOf` gives a valid representation of a resource type (from the description), which a sample starts from. */
export const sandboxEventOperations = (exampleOf: RepresentationExample) => [
  defineOperation({
    id: "sandbox.events.create",
    method: "POST",
    path: "/sandbox/events",
    summary: "Emit a sample event of a catalog type, as a change would (sandbox only).",
    description:
      "The event is real in the sandbox: `GET /events` lists it, the event streams send it and the webhooks subscribed to its type receive it, signed. " +
      "Its `data.object` is the example of the resource's schema in this description (so it has the shape of a real event of the type), with the current time in its timestamps and a fresh ID of the resource's prefix; no resource is made. " +
      "With production credentials, 409 `sandbox_required`; a type outside the catalog, 422 on `type`. `syllabus trigger <type>` calls it.",
    tag: "Sandbox",
    capability: "sandbox.trigger",
    body: TriggerSandboxEventBody,
    idempotency: "required",
    success: { status: 201, description: "The event, as recorded.", schema: EventSchema, headers: ["Location"] },
    errors: ["sandbox_required"],
    handler: ({ body }) =>
      triggerSandboxEvent(body, eventTypeCatalog, exampleOf).pipe(
        Effect.map((data) => ({ status: 201, body: { data }, headers: { location: `/api/v3/events/${String(data.id)}` } }))
      )
  })
]
