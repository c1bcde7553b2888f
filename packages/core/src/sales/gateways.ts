/**
 * Payment gateways (`gtw_`, release 3.2.0, open-points route `/sales/gateways`): the account's
 * connections to the payment services that sell its products. Decisions (also in docs/sales.md
 * and the OpenAPI description):
 *
 * - `kind` is a closed list (`stripe`, `paypal`, `mercado_pago`, `generic`), fixed at creation.
 *   A named kind accepts only its own credential keys (Stripe: `secret_key`, `publishable_key`,
 *   `restricted_key`; PayPal: `client_id`, `client_secret`; Mercado Pago: `access_token`,
 *   `public_key`); `generic` accepts any key name of lower-case letters, digits and `_`.
 * - `credentials` are write-only, as Stripe shows its keys: a create or a PATCH sends values, a
 *   PATCH merges (a key with a string sets it, with `null` removes it); the representation only
 *   says which keys are set, with their last four characters. The values are kept in the
 *   record like a webhook's signing secret (a hidden field: the platform must use them to call
 *   the gateway, so they cannot be hashed), and never reach a representation, an event, the
 *   audit trail, an idempotency receipt, an operation's items or a log line. Gateways have no
 *   batch types for that reason (a batch's items are kept 30 days).
 * - Each gateway has a Standard Webhooks signing secret (`whsec_…`) for its incoming
 *   notifications (`gateway-notifications.ts`), shown once: at creation and at each
 *   `POST /sales/gateways/{id}/secret-rotations`. As Stripe does, a rotation keeps the previous
 *   secret valid for a grace period (`previous_secret_expires_in`, 0 to 86,400 seconds,
 *   default 86,400), so the gateway's side can be switched without losing notifications; `0`
 *   ends it at once (a leaked secret). The rule is the webhooks' too (events/signing-secrets.ts).
 * - `status` `active` or `disabled`: a disabled gateway's notifications are refused (409).
 * - The notification endpoint names only the gateway, before any credential or tenant is known:
 *   a `gateway_route` record beside each gateway holds a global unique key on its ID, which
 *   finds the gateway's account and environment in one read of the store's key index.
 * - Switched off (`/settings/sales` `enabled: false`): creating and changing gateways answer
 *   409 `feature_disabled`; reads, the trash, a restore and secret rotations stay (a leaked
 *   secret must always be replaceable), and notifications are still recorded.
 * - Trash: a trashed gateway takes no notification (404) and keeps its sales events.
 */
import { Effect, Encoding, Schema } from "effect"
import { apiError, type DetailItem, readUnavailable, writeUnavailable } from "../errors/errors.js"
import { firstSecretFields, PreviousSecretExpiresAt, PreviousSecretExpiresIn, SECRET_FIELDS } from "../events/signing-secrets.js"
import { createWithSigningSecret, rotateSigningSecret } from "../events/webhooks.js"
import { type Json, type JsonObject, Records } from "../ports/store.js"
import { createResource, defineResource, equalsFilter, type ResourceDefinition, ruleViolation } from "../records/resource.js"
import { Enum, Text } from "../records/schema.js"
import { requireSalesFeature } from "./features.js"

export const GATEWAY_TYPE = "gateway"
/** One per gateway, same ID, in the gateway's tenant: its global key finds the tenant from the ID alone. */
export const GATEWAY_ROUTE_TYPE = "gateway_route"
const ROUTE_KEY = "gateway_route"

export const gatewayKinds = ["stripe", "paypal", "mercado_pago", "generic"] as const
export type GatewayKind = (typeof gatewayKinds)[number]

/** The credential keys a named kind accepts; `generic` accepts any well-formed name. */
export const gatewayCredentialKeys: Readonly<Record<Exclude<GatewayKind, "generic">, ReadonlyArray<string>>> = {
  stripe: ["secret_key", "publishable_key", "restricted_key"],
  paypal: ["client_id", "client_secret"],
  mercado_pago: ["access_token", "public_key"]
}

const CREDENTIAL_KEY_PATTERN = /^[a-z][a-z0-9_]{0,62}$/
/** At most this many keys per gateway. */
export const CREDENTIALS_MAX = 20

const Status = Enum("active", "disabled")
const Kind = Enum(...gatewayKinds)

const CredentialValue = Text({ min: 1, max: 4096 })
const credentialsDescription = `API keys of the gateway, write-only: key names of lower-case letters, digits and \`_\` (at most ${CREDENTIALS_MAX} keys; a named kind accepts only its own: Stripe \`secret_key\`, \`publishable_key\`, \`restricted_key\`; PayPal \`client_id\`, \`client_secret\`; Mercado Pago \`access_token\`, \`public_key\`), values of 1 to 4,096 characters. Never returned: the representation says which keys are set and their last four characters.`

const keyNamesValid = (record: Readonly<Record<string, unknown>>) =>
  Object.keys(record).every((key) => CREDENTIAL_KEY_PATTERN.test(key)) || "invalid_value|expected=key names of a-z, 0-9 and _"
const atMostKeys = (record: Readonly<Record<string, unknown>>) => Object.keys(record).length <= CREDENTIALS_MAX || `too_many_items|max=${CREDENTIALS_MAX}`

const CreateCredentials = Schema.Record({ key: Schema.String, value: CredentialValue }).pipe(
  Schema.filter(keyNamesValid),
  Schema.filter(atMostKeys),
  Schema.annotations({ description: credentialsDescription })
)
const UpdateCredentials = Schema.Record({ key: Schema.String, value: Schema.NullOr(CredentialValue) }).pipe(
  Schema.filter(keyNamesValid),
  Schema.filter(atMostKeys),
  Schema.annotations({ description: `${credentialsDescription} Merged into the keys set: a key with a string sets or replaces it, with \`null\` removes it; keys not named stay.` })
)

const optional = <S extends Schema.Schema.AnyNoContext>(schema: S) => Schema.optionalWith(schema, { exact: true })

export const CreateGatewayBody = Schema.Struct({
  kind: Kind.annotations({ description: "The payment service: `stripe`, `paypal`, `mercado_pago` or `generic`. Fixed at creation." }),
  name: Text({ min: 1, max: 200 }),
  status: optional(Status),
  credentials: optional(CreateCredentials)
}).annotations({ identifier: "CreateGatewayBody" })

export const UpdateGatewayBody = Schema.Struct({
  name: optional(Text({ min: 1, max: 200 })),
  status: optional(Status),
  credentials: optional(UpdateCredentials),
  kind: Schema.optional(Schema.Never.annotations({ message: () => "not_allowed", description: "Fixed at creation: not writable (422 `not_allowed`)." }))
}).annotations({ identifier: "UpdateGatewayBody" })

type CreateBody = typeof CreateGatewayBody.Type
type UpdateBody = typeof UpdateGatewayBody.Type

/** What the representation says of the keys set: their names and last four characters, never the values. */
const credentialsView = (values: Readonly<Record<string, Json>>): JsonObject =>
  Object.fromEntries(
    Object.keys(values)
      .sort()
      .map((key) => [key, { last4: String(values[key]).slice(-4) }])
  )

const credentialFields = (values: Readonly<Record<string, string>>) => ({ credentials: credentialsView(values), credential_values: values })

/** The create body as `createGateway` passes it, with the secret it generated (a client cannot send it: bodies are strict). */
type CreateInput = CreateBody & { readonly signing_secret?: string }

export const gateways: ResourceDefinition = defineResource({
  type: GATEWAY_TYPE,
  idKind: "gateway",
  plural: "gateways",
  path: "/sales/gateways",
  tag: "Sales",
  fields: {
    kind: Schema.Literal(...gatewayKinds),
    name: Schema.String,
    status: Schema.Literal("active", "disabled").annotations({ description: "`disabled`: the gateway's notifications are refused (409 `state_conflict`, reason `gateway_disabled`) and nothing is recorded." }),
    credentials: Schema.Record({ key: Schema.String, value: Schema.Struct({ last4: Schema.String }) }).annotations({
      description: "The credential keys set, each with the last four characters of its value; the values themselves are never returned."
    }),
    notification_path: Schema.String.annotations({
      description: "Where the gateway sends its signed notifications, on this server's origin, outside `/api/v3`: `/gateways/{gateway_id}/notifications`."
    }),
    previous_secret_expires_at: PreviousSecretExpiresAt("accepted")
  },
  create: CreateGatewayBody,
  update: UpdateGatewayBody,
  defaults: (body: CreateInput, context) =>
    Effect.gen(function* () {
      if (body.signing_secret === undefined) {
        return yield* Effect.fail(apiError("internal_error", { internal: "a gateway is created by createGateway, with its secret" }))
      }
      yield* requireSalesFeature("sales")
      return {
        kind: body.kind,
        name: body.name,
        status: body.status ?? "active",
        ...credentialFields(body.credentials ?? {}),
        notification_path: `/gateways/${context.id}/notifications`,
        ...firstSecretFields(body.signing_secret)
      }
    }),
  change: (current, patch: UpdateBody) =>
    Effect.gen(function* () {
      // A restore alone (`{ deleted: false }`) is the trash's business, allowed with sales off.
      if (Object.keys(patch).length > 0) yield* requireSalesFeature("sales")
      const next: Record<string, Json> = { ...current }
      if (patch.name !== undefined) next.name = patch.name
      if (patch.status !== undefined) next.status = patch.status
      if (patch.credentials !== undefined) {
        const values: Record<string, string> = { ...((current.credential_values ?? {}) as Record<string, string>) }
        for (const [key, value] of Object.entries(patch.credentials)) {
          if (value === null) delete values[key]
          else values[key] = value
        }
        Object.assign(next, credentialFields(values))
      }
      return next as JsonObject
    }),
  rules: {
    check: (data) =>
      Effect.gen(function* () {
        const values = (data.credential_values ?? {}) as Record<string, string>
        const kind = data.kind as GatewayKind
        const details: Array<DetailItem> = []
        if (Object.keys(values).length > CREDENTIALS_MAX) {
          details.push({ field: "credentials", code: "too_many_items", params: { max: CREDENTIALS_MAX } })
        }
        if (kind !== "generic") {
          const accepted = gatewayCredentialKeys[kind]
          for (const key of Object.keys(values).sort()) {
            if (!accepted.includes(key)) details.push({ field: `credentials.${key}`, code: "invalid_value", reason: "not_a_key_of_kind", allowed: accepted })
          }
        }
        if (details.length > 0) return yield* Effect.fail(ruleViolation(details))
      }),
    afterCreate: (record) =>
      Effect.gen(function* () {
        const records = yield* Records
        yield* records
          .insert(record.tenant, GATEWAY_ROUTE_TYPE, record.id, { gateway_id: record.id }, [{ name: ROUTE_KEY, value: record.id, global: true }])
          .pipe(Effect.mapError(writeUnavailable))
      })
  },
  hidden: [...SECRET_FIELDS, "credential_values"],
  trash: true,
  revision: "string",
  filters: {
    status: equalsFilter("status", Status, "Gateways with this status."),
    kind: equalsFilter("kind", Kind, "Gateways of this kind.")
  },
  sorts: [
    { name: "created_at", field: "id", kind: "text" },
    { name: "name", field: "name", kind: "text" }
  ],
  defaultReversed: true,
  search: ["name"],
  writeErrors: ["feature_disabled"],
  // Served by `@syllabus/http` routes/sales-events.ts: the create shows the secret once.
  // Only in `describedResources`, not `resourceDefinitions`: no batch types, as an operation's
  // items (kept 30 days) would hold the credentials.
  replacedRoutes: ["list", "get", "create", "update", "delete"]
})

/** `POST /sales/gateways`: a new gateway with its signing secret, shown in this answer only. */
export const createGateway = (body: CreateBody) => createWithSigningSecret(gateways, body satisfies Omit<CreateInput, "signing_secret">)

export const SecretRotationBody = Schema.Struct({ previous_secret_expires_in: PreviousSecretExpiresIn }).annotations({
  identifier: "GatewaySecretRotationBody"
})

/**
 * A new signing secret; the one it replaces stays valid for `previous_secret_expires_in`
 * seconds (default 24 hours; events/signing-secrets.ts). Event `gateway.secret_rotated`.
 */
export const rotateGatewaySecret = (id: string, body: typeof SecretRotationBody.Type) =>
  rotateSigningSecret(gateways, id, body.previous_secret_expires_in)

/** The gateway named by a notification's path, in whichever account and environment it lives; `undefined` when none. */
export const findGatewayById = (id: string) =>
  Effect.gen(function* () {
    const records = yield* Records
    const route = yield* records.findUnique("global", GATEWAY_ROUTE_TYPE, { name: ROUTE_KEY, value: id }).pipe(Effect.mapError(readUnavailable))
    if (!route) return undefined
    const gateway = yield* records.get(route.tenant, GATEWAY_TYPE, id).pipe(Effect.mapError(readUnavailable))
    return gateway && gateway.data.deleted !== true ? gateway : undefined
  })

/** The key of a `whsec_` secret: the bytes of its base64 part (Standard Webhooks). */
export const secretKey = (secret: string): Uint8Array => {
  const decoded = Encoding.decodeBase64(secret.startsWith("whsec_") ? secret.slice("whsec_".length) : secret)
  return decoded._tag === "Right" ? decoded.right : new Uint8Array()
}
