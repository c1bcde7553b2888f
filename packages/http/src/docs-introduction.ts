/**
 * The introduction of the public reference: what a developer who has never seen the
 * contract needs before the first call (authentication and its two modes, idempotency,
 * errors, pagination, rate limits, versions). Written once, as sections of blocks with
 * inline Markdown (`code`, **bold**, [links](/docs)); `/docs` shows it as HTML and the
 * description carries it as Markdown in `info.description`.
 */
import { languages } from "@syllabus/core"

type Block =
  | string
  | { readonly list: ReadonlyArray<string> }
  | { readonly code: string }
  | { readonly table: ReadonlyArray<ReadonlyArray<string>> }

export interface Section {
  /** The anchor: `/docs#authentication`. */
  readonly id: string
  readonly title: string
  readonly blocks: ReadonlyArray<Block>
}

export const lead =
  "The administration API of an online-course platform account: its catalog and content, people, learning, support, sales, " +
  "settings and integrations, for a school's own systems (a CRM sync, a nightly script) and for tools an administrator uses. " +
  "Every path below is under `/api/v3` on this server; bodies are JSON in UTF-8. A resource is answered as `{ \"data\": … }`, " +
  "a collection as `{ \"data\": [ … ], \"page\": … }`."

export const introduction: ReadonlyArray<Section> = [
  {
    id: "authentication",
    title: "Authentication",
    blocks: [
      "Every call needs an API credential. An administrator creates one in the dashboard, or a credential allowed to do so " +
        "creates it with `POST /credentials`. Its secret is shown once, when it is created: store it then. A secret begins with " +
        "`ck_live_` for the account's production data, or `ck_test_` for its **sandbox**, a separate set of data where an integration " +
        "can be tried without consequences (only the sandbox can reset itself with `POST /sandbox/resets` or emit sample events with " +
        "`POST /sandbox/events`).",
      "A credential holds capabilities (`products.read`, `users.create`…), given by its policies: each operation of this reference " +
        "names the one it needs (`x-required-capability`). A call without it answers 403 `permission_denied`; a resource outside the " +
        "credential's reach answers 404 `not_found`, as if it did not exist.",
      "A missing, malformed or unknown secret answers 401 `unauthenticated`; a revoked, suspended or expired credential 401 " +
        "`credential_revoked`, `credential_suspended` or `credential_expired`. `GET /credentials/current` tells which credential a " +
        "secret is, and in which environment."
    ]
  },
  {
    id: "modes",
    title: "The two modes: API key, or an administrator signed in",
    blocks: [
      "A credential's `auth_mode` says how it may be used: `autonomous`, `human_required` or `both`.",
      "**Autonomous mode (API key).** The secret alone, as a bearer token. Calls act as the credential itself: the right mode " +
        "for a server, a scheduled job, a sync.",
      { code: "GET /api/v3/products\nAuthorization: Bearer ck_live_…" },
      "**Human mode (OAuth 2.0 with PKCE).** A tool used by a person (a desktop app, a command-line client such as `syllabus login`) " +
        "acts for one administrator, on top of a credential: the secret goes in `X-API-Key` and the administrator's access token is " +
        "the bearer. Calls are then recorded as that administrator's, and limited to what both the credential and the administrator may do.",
      { code: "GET /api/v3/products\nX-API-Key: ck_live_…\nAuthorization: Bearer eyJhbGciOiJSUzI1NiIs…" },
      {
        list: [
          "The server's OAuth metadata is at `/.well-known/oauth-authorization-server` (RFC 8414): the authorization, token and revocation endpoints.",
          "The client is public, with the id `service-cli` and no secret. Its redirect address is a loopback one, `http://127.0.0.1:{port}/callback` " +
            "(or `http://[::1]:{port}/callback`), on any port.",
          "The authorization request carries a PKCE challenge with `code_challenge_method=S256` and a random `state`. When the browser comes back, " +
            "check that `state` is yours and that `iss` is the metadata's `issuer`, then exchange the code at the token endpoint with its `code_verifier`.",
          "The administrator signs in with a second factor (an administrator without one cannot authorize), and must be linked to the credential.",
          "An access token lasts 1 hour; a refresh token, 30 days. Each refresh returns a new pair and retires the old refresh token; " +
            "presenting a retired one again revokes every token of that administrator for the client."
        ]
      },
      "Answers particular to human mode: 403 `human_mode_not_allowed` (the credential is `autonomous`), 401 `human_context_required` " +
        "(the credential needs an administrator and no access token came), 401 `invalid_access_token` (expired, revoked or not ours: refresh " +
        "or sign in again), 403 `tenant_mismatch` and `admin_not_eligible` (the administrator is of another account, or not linked to the " +
        "credential), 401 `ambiguous_credentials` (the secret sent both as bearer and in `X-API-Key`, or a header twice)."
    ]
  },
  {
    id: "idempotency",
    title: "Retrying safely: idempotency keys",
    blocks: [
      "A network can fail after the server has done the work and before the answer arrives. To make a retry safe, send an " +
        "`Idempotency-Key` header with a value of your choosing (1 to 128 characters from `A-Z a-z 0-9 . _ : -`, e.g. a UUID) " +
        "on every call that changes something. Operations that create are marked **Idempotency-Key required** in this reference: " +
        "without a key they answer 422 `idempotency_key_required`.",
      {
        list: [
          "The same key with the same body, within 48 hours: the recorded answer again, with the header `Idempotent-Replayed: true`. Nothing is done twice.",
          "The same key with another body or on another operation: 422 `idempotency_key_reused` (reason `different_body` or `different_resource`). Use a new key for a new request.",
          "The same key while the first call is still running: 409 `idempotency_in_progress`; try again a little later.",
          "A call answered with an error executed nothing and did not use up its key.",
          "An answer that carried a secret shown once (a new credential) is not replayed: 409 `secret_not_replayable`."
        ]
      },
      "So after a timeout, a 500 or a 503, send the very same request with the very same key: either it was done and you get its " +
        "recorded answer, or it is done now.",
      "Edits have a second safeguard. A resource that can change answers with an `ETag`; send it back as `If-Match` with a `PATCH` " +
        "or `PUT`, and if someone changed the resource in between the write is refused with 412 `revision_mismatch` and nothing is " +
        "saved. Without `If-Match` the write applies to whatever is current."
    ]
  },
  {
    id: "errors",
    title: "Errors",
    blocks: [
      "Every error has the same shape, whatever the status:",
      {
        code: JSON.stringify(
          {
            error: {
              code: "validation_failed",
              message: "One or more values are invalid; see the details for each problem.",
              request_id: "req_0Rb3kX9sT",
              details: [{ field: "showcase_id", code: "validation_failed", reason: "not_found", message: "No record with this ID exists, or it is outside the credential's scope." }]
            }
          },
          null,
          2
        )
      },
      {
        list: [
          "`code` is the field to branch on: it is stable, and each operation of this reference lists the codes it may answer, by status " +
            "(`x-error-codes`). A code your client does not know is handled by its HTTP status.",
          `\`message\` is for people, in the language of \`Accept-Language\` (${languages.map((language) => `\`${language}\``).join(", ")}); it may change at any time.`,
          "`request_id` is also in the `X-Request-Id` header of every answer: quote it when asking for help.",
          "`details` itemizes the problems (empty when there is nothing to itemize): each names the `field` of the body or the query " +
            "`parameter`, a `code`, a `message`, and for a rule of the business a `reason` (`not_found`, `different_body`…)."
        ]
      },
      "What to do, by status:",
      {
        table: [
          ["Status", "Meaning", "What a client does"],
          ["400, 404, 405, 406, 409, 412, 413, 415, 422", "the request cannot be done as it is", "fix it; sent again unchanged it gets the same answer"],
          ["401, 403", "the credential, the mode or a permission", "check the secret, the token or the credential's capabilities"],
          ["429", "a rate limit", "wait for `Retry-After` seconds (see Rate limits)"],
          ["500, 503", "the server could not answer", "retry with exponential backoff, with the same `Idempotency-Key`"]
        ]
      }
    ]
  },
  {
    id: "pagination",
    title: "Pagination, sorting and filters",
    blocks: [
      "A list answers one page and a cursor to the next: `limit` sets the page size (1 to 200, 50 by default), and " +
        "`page.next_cursor` is the `cursor` of the following page. A `null` cursor means the end. There is no total and no offset.",
      { code: "GET /api/v3/products?limit=100&status=published\nGET /api/v3/products?limit=100&status=published&cursor=eyJhZnRlciI6…" },
      {
        list: [
          "Send a cursor with the same filters and `sort` as the request that returned it. Cursors are opaque and valid for 24 hours; " +
            "an altered, expired or mismatched one answers 400 `invalid_cursor`.",
          "`sort` takes the values the operation lists; a leading `-` reverses the order (`sort=-created_at`).",
          "Filters are query parameters declared by each operation (`status`, `external_id`, `created_after`, `q`…); a list filter is " +
            "written with `[]`: `product_id[]=prd_…&product_id[]=prd_…`. A query parameter the operation does not declare answers 400 " +
            "`unknown_parameter`, so a typo never goes unnoticed.",
          "A few small collections answer everything at once, in the same envelope, with `next_cursor` null."
        ]
      }
    ]
  },
  {
    id: "rate-limits",
    title: "Rate limits",
    blocks: [
      "Calls are counted over a sliding 60-second window, in three scopes at once; a call over any of them is refused.",
      {
        table: [
          ["Scope", "Production", "Sandbox"],
          ["origin (the caller's IP address, before authentication)", "600 per minute", "600 per minute"],
          ["account (all its credentials together)", "1,000 per minute", "500 per minute"],
          ["credential", "300 per minute", "150 per minute"]
        ]
      },
      "Every authenticated answer carries `RateLimit-Limit`, `RateLimit-Remaining` and `RateLimit-Reset` (seconds) for the most " +
        "restricted scope. Over a limit, the answer is 429 `rate_limit_exceeded` with a `Retry-After` header; its body adds " +
        "`retry_after_seconds`, `blocked_by` (the scopes exceeded) and `limits` (each scope's limit and what remains). Wait that long " +
        "and send the call again: a refused call does not count. `GET /account/usage` shows the account's calls and the limits in effect."
    ]
  },
  {
    id: "versions",
    title: "Versions and changes",
    blocks: [
      "Every answer names the release that served it in `X-Service-Release`. Within version 3 changes only add: new operations, new " +
        "optional fields, new response fields, new values in the enums marked `x-extensible: true`. So a client ignores the fields it " +
        "does not know and accepts unknown values of those enums; the enums marked `x-extensible: false` are closed. An operation " +
        "that is to be removed is announced with `Deprecation` and `Sunset` headers and marked deprecated here; after its sunset date " +
        "it answers 410 `operation_sunset`."
    ]
  }
]

// ---------------------------------------------------------------------------------------
// Markdown, for the description

const blockMarkdown = (block: Block): string => {
  if (typeof block === "string") return block
  if ("list" in block) return block.list.map((item) => `- ${item}`).join("\n")
  if ("code" in block) return `\`\`\`\n${block.code}\n\`\`\``
  const [head = [], ...rows] = block.table
  return [head, head.map(() => "---"), ...rows].map((cells) => `| ${cells.join(" | ")} |`).join("\n")
}

/** The introduction in Markdown, each section a `##` heading. */
export const introductionMarkdown = (): string =>
  [lead, ...introduction.map((section) => [`## ${section.title}`, ...section.blocks.map(blockMarkdown)].join("\n\n"))].join("\n\n")

// ---------------------------------------------------------------------------------------
// HTML, for /docs

export const escapeHtml = (text: string): string =>
  text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;")

/** Inline Markdown of the introduction's text: `code`, **bold** and [links](/path). */
export const inlineHtml = (text: string): string =>
  text
    .split(/(`[^`]+`)/)
    .map((part) =>
      part.startsWith("`") && part.endsWith("`") && part.length > 1
        ? `<code>${escapeHtml(part.slice(1, -1))}</code>`
        : escapeHtml(part)
            .replace(/\*\*([^*]+)\*\*/g, "<strong>$1</strong>")
            .replace(/\[([^\]]+)\]\((\/[^)\s]*)\)/g, '<a href="$2">$1</a>')
    )
    .join("")

const blockHtml = (block: Block): string => {
  if (typeof block === "string") return `<p>${inlineHtml(block)}</p>`
  if ("list" in block) return `<ul>${block.list.map((item) => `<li>${inlineHtml(item)}</li>`).join("")}</ul>`
  if ("code" in block) return `<pre><code>${escapeHtml(block.code)}</code></pre>`
  const [head = [], ...rows] = block.table
  return (
    `<table><thead><tr>${head.map((cell) => `<th>${inlineHtml(cell)}</th>`).join("")}</tr></thead>` +
    `<tbody>${rows.map((row) => `<tr>${row.map((cell) => `<td>${inlineHtml(cell)}</td>`).join("")}</tr>`).join("")}</tbody></table>`
  )
}

/** One section as HTML: its heading (with its anchor) and its blocks. */
export const sectionHtml = (section: Section): string =>
  `<section id="${section.id}"><h2>${escapeHtml(section.title)}</h2>${section.blocks.map(blockHtml).join("")}</section>`
