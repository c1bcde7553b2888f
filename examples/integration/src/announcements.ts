/**
 * React to Syllabus webhooks: when a product is published, announce it (here: keep the
 * announcement in a list; a real app would post it to the school's newsletter). The
 * signature is checked with the webhook's secret before anything is trusted, and the
 * product is read back from the API rather than taken from the payload.
 */
import { Webhook } from "standardwebhooks"
import type { SyllabusClient } from "./client.js"

export interface Announcement {
  readonly productId: string
  readonly title: string
  /** The delivery's `webhook-id` (the event ID): a redelivery announces nothing twice. */
  readonly eventId: string
}

export const announcer = (options: { readonly webhookSecret: string; readonly client: SyllabusClient }) => {
  const verifier = new Webhook(options.webhookSecret)
  const announcements: Array<Announcement> = []

  /** The webhook endpoint: 204 when handled, 400 when the signature does not verify, 503 when it cannot be handled now. */
  const handle = async (request: Request): Promise<Response> => {
    const body = await request.text()
    const headers: Record<string, string> = {}
    request.headers.forEach((value, name) => (headers[name] = value))
    let event: { id: string; type: string; data: { object: { id: string } } }
    try {
      event = verifier.verify(body, headers) as typeof event
    } catch {
      return new Response("bad signature", { status: 400 })
    }
    if (event.type === "product.published" && !announcements.some((a) => a.eventId === event.id)) {
      try {
        const product = await options.client.get(`/products/${event.data.object.id}`)
        announcements.push({ productId: product.id, title: `New course: ${product.name}`, eventId: event.id })
      } catch {
        // The API could not be read: not handled, so Syllabus delivers it again later.
        return new Response("try again later", { status: 503 })
      }
    }
    return new Response(null, { status: 204 })
  }

  return { handle, announcements: (): ReadonlyArray<Announcement> => announcements }
}
