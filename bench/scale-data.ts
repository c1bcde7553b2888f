/**
 * The data of `bench/scale.ts`: products and users generated from their index, the same in
 * TypeScript (loaded into the memory store through `Records`) and in SQL (loaded into
 * PostgreSQL with `INSERT … SELECT generate_series`). Both produce the JSON `createResource`
 * stores for a product or a user created through the API (the description's `defaults`, the
 * managed fields, `deleted`, `search_text`); `verifyPgRows` compares a sample of each.
 *
 * Record `i` (0-based) of account `a` (0 = the measured account):
 * - created at 2023-01-01 + i × 30 s + a ms (users 5 ms later), its ID made from that time
 *   as `Ids` makes it (so `sort=created_at`, by ID, is by creation);
 * - products: `<Adjective> <Subject> <i+1>` (10 × 20 words), `external_id` `ext-<i+1>`, one of
 *   100 showcases (`i % 100`) at position `i / 100 + 1`, `draft` one in 3 (else `published`),
 *   `blog` one in 4 (else `course`);
 * - users: `<First> <Last>` (40 × 40 names, and `Quixote` as the last name one in 10,007),
 *   email `<first>.<last>.<i+1>@example.com`, `blocked` one in 20 (else `active`);
 * - one in 97 of each is in the trash (`deleted: true`, no unique key).
 */
import { formatId, formatTimestamp, ID_EPOCH_MS, ID_SEQUENCE_BITS, newProductSettings, type JsonObject, type UniqueKey } from "@syllabus/core"

export const T0 = Date.UTC(2023, 0, 1)
const STEP_MS = 30_000
const SHOWCASES = 100
const USER_OFFSET_MS = 5

export const adjectives = ["Introductory", "Advanced", "Applied", "Practical", "Modern", "Classical", "Intensive", "Essential", "Complete", "Creative"] as const
export const subjects = [
  "Algebra", "Biology", "Chemistry", "Design", "Economics", "French", "Geometry", "History", "Illustration", "Journalism",
  "Kotlin", "Law", "Marketing", "Nutrition", "Photography", "Physics", "Python", "Rhetoric", "Statistics", "Writing"
] as const
export const firstNames = [
  "Ana", "Bruno", "Carla", "Daniel", "Elena", "Felipe", "Gabriela", "Hugo", "Isabel", "Joao", "Karina", "Lucas", "Marina", "Nicolas",
  "Olivia", "Pedro", "Quiteria", "Rafael", "Sofia", "Tiago", "Ursula", "Vitor", "Wanda", "Xavier", "Yara", "Zeca", "Alice", "Bernardo",
  "Cecilia", "Diego", "Eva", "Fabio", "Gustavo", "Helena", "Igor", "Julia", "Kleber", "Laura", "Mateus", "Natalia"
] as const
export const lastNames = [
  "Silva", "Santos", "Oliveira", "Souza", "Rodrigues", "Ferreira", "Alves", "Pereira", "Lima", "Gomes", "Costa", "Ribeiro", "Martins",
  "Carvalho", "Almeida", "Lopes", "Soares", "Fernandes", "Vieira", "Barbosa", "Rocha", "Dias", "Nascimento", "Andrade", "Moreira",
  "Nunes", "Marques", "Machado", "Mendes", "Freitas", "Cardoso", "Ramos", "Goncalves", "Santana", "Teixeira", "Moura", "Correia",
  "Pinto", "Araujo", "Campos"
] as const
export const RARE_LAST_NAME = "Quixote"
const RARE_EVERY = 10_007
const TRASH_EVERY = 97

const createdMs = (i: number, account: number, offset: number) => T0 + i * STEP_MS + account + offset
const idNumber = (ms: number) => (ms - ID_EPOCH_MS) * 2 ** ID_SEQUENCE_BITS
const showcaseId = (s: number) => formatId("showcase", idNumber(T0 - 86_400_000) + s)
const trashed = (i: number) => i % TRASH_EVERY === TRASH_EVERY - 1

export const productId = (i: number, account: number) => formatId("product", idNumber(createdMs(i, account, 0)))
export const userId = (i: number, account: number) => formatId("user", idNumber(createdMs(i, account, USER_OFFSET_MS)))

export const productData = (i: number, account: number): JsonObject => {
  const at = formatTimestamp(createdMs(i, account, 0))
  const name = `${adjectives[i % 10]} ${subjects[Math.floor(i / 10) % 20]} ${i + 1}`
  const externalId = `ext-${i + 1}`
  return {
    object: "product",
    id: productId(i, account),
    name,
    image: null,
    external_id: externalId,
    showcase_id: showcaseId(i % SHOWCASES),
    format: i % 4 === 3 ? "blog" : "course",
    status: i % 3 === 0 ? "draft" : "published",
    position: Math.floor(i / SHOWCASES) + 1,
    ...newProductSettings,
    created_at: at,
    updated_at: at,
    deleted: trashed(i),
    search_text: `${name}\n${externalId}`
  }
}

const userNames = (i: number) => {
  const first = firstNames[i % 40]!
  const last = i % RARE_EVERY === RARE_EVERY - 1 ? RARE_LAST_NAME : lastNames[Math.floor(i / 40) % 40]!
  return { first, last }
}

export const userData = (i: number, account: number): JsonObject => {
  const at = formatTimestamp(createdMs(i, account, USER_OFFSET_MS))
  const { first, last } = userNames(i)
  const name = `${first} ${last}`
  return {
    object: "user",
    id: userId(i, account),
    name,
    email: `${first}.${last}.${i + 1}@example.com`.toLowerCase(),
    document: null,
    phone: null,
    status: i % 20 === 0 ? "blocked" : "active",
    tags: [],
    custom_fields: {},
    last_access_at: null,
    created_at: at,
    updated_at: at,
    deleted: trashed(i),
    search_text: name
  }
}

/** The unique keys `createResource` gives the record (none in the trash). */
export const productKeys = (data: JsonObject): ReadonlyArray<UniqueKey> =>
  data.deleted === true ? [] : [{ name: "external_id", value: String(data.external_id) }]
export const userKeys = (data: JsonObject): ReadonlyArray<UniqueKey> =>
  data.deleted === true ? [] : [{ name: "email", value: String(data.email) }]

// ---------------------------------------------------------------------------------------
// The same in SQL

const sqlArray = (xs: ReadonlyArray<string>) => `ARRAY[${xs.map((x) => `'${x}'`).join(", ")}]`
const ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

/** `bench_id(prefix, n)`: `formatId` in SQL (9 base62 digits), a function of the bench database only. */
export const createIdFunctionSql = `
  CREATE OR REPLACE FUNCTION bench_id(prefix text, n bigint) RETURNS text IMMUTABLE LANGUAGE sql AS $$
    SELECT prefix || '_' || string_agg(substr('${ALPHABET}', ((n / (62::numeric ^ k)::bigint) % 62)::int + 1, 1), '' ORDER BY k DESC)
    FROM generate_series(0, 8) AS k
  $$`

const msExpr = (account: number, offset: number) => `(${T0 + account + offset}::bigint + i::bigint * ${STEP_MS})`
const isoExpr = (ms: string) => `to_char(timestamp '1970-01-01' + ${ms} * interval '1 millisecond', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`
const idExpr = (prefix: string, ms: string) => `bench_id('${prefix}', (${ms} - ${ID_EPOCH_MS}) * ${2 ** ID_SEQUENCE_BITS})`

/** Products `from` ≤ i < `to` of `account` into `records` of the tenant. */
export const productsSql = (accountId: string, account: number, from: number, to: number) => {
  const ms = msExpr(account, 0)
  return `
  INSERT INTO records (account_id, environment, type, id, revision, data)
  SELECT '${accountId}', 'production', 'product', p.id, 1, jsonb_build_object(
    'object', 'product', 'id', p.id, 'name', p.name, 'image', null, 'external_id', p.ext,
    'showcase_id', bench_id('shw', ${idNumber(T0 - 86_400_000)}::bigint + i % ${SHOWCASES}),
    'format', CASE WHEN i % 4 = 3 THEN 'blog' ELSE 'course' END,
    'status', CASE WHEN i % 3 = 0 THEN 'draft' ELSE 'published' END,
    'position', i / ${SHOWCASES} + 1, 'lessons_count', 0, 'modules_count', 0,
    'display', jsonb_build_object('hide_module_bar', false, 'show_progress', true),
    'definitions', jsonb_build_object('alias_product_id', null),
    'offer', jsonb_build_object(
      'embed', jsonb_build_object('dynamic', false, 'url', null), 'expected_delivery_id', null,
      'free', jsonb_build_object('class_id', null, 'duration', null, 'duration_type', null, 'enabled', false), 'url', null),
    'created_at', p.at, 'updated_at', p.at, 'deleted', i % ${TRASH_EVERY} = ${TRASH_EVERY - 1},
    'search_text', p.name || E'\\n' || p.ext)
  FROM (
    SELECT i, ${idExpr("prd", ms)} AS id, ${isoExpr(ms)} AS at, 'ext-' || (i + 1) AS ext,
      (${sqlArray(adjectives)})[1 + i % 10] || ' ' || (${sqlArray(subjects)})[1 + (i / 10) % 20] || ' ' || (i + 1) AS name
    FROM generate_series(${from}, ${to - 1}) AS i
  ) AS p`
}

/** Users `from` ≤ i < `to` of `account` into `records` of the tenant. */
export const usersSql = (accountId: string, account: number, from: number, to: number) => {
  const ms = msExpr(account, USER_OFFSET_MS)
  return `
  INSERT INTO records (account_id, environment, type, id, revision, data)
  SELECT '${accountId}', 'production', 'user', u.id, 1, jsonb_build_object(
    'object', 'user', 'id', u.id, 'name', u.first || ' ' || u.last,
    'email', lower(u.first || '.' || u.last || '.' || (i + 1) || '@example.com'),
    'document', null, 'phone', null,
    'status', CASE WHEN i % 20 = 0 THEN 'blocked' ELSE 'active' END,
    'tags', '[]'::jsonb, 'custom_fields', '{}'::jsonb, 'last_access_at', null,
    'created_at', u.at, 'updated_at', u.at, 'deleted', i % ${TRASH_EVERY} = ${TRASH_EVERY - 1},
    'search_text', u.first || ' ' || u.last)
  FROM (
    SELECT i, ${idExpr("usr", ms)} AS id, ${isoExpr(ms)} AS at, (${sqlArray(firstNames)})[1 + i % 40] AS first,
      CASE WHEN i % ${RARE_EVERY} = ${RARE_EVERY - 1} THEN '${RARE_LAST_NAME}' ELSE (${sqlArray(lastNames)})[1 + (i / 40) % 40] END AS last
    FROM generate_series(${from}, ${to - 1}) AS i
  ) AS u`
}

/** The unique keys of the loaded records, as `Records.insert` writes them. */
export const keysSql = `
  INSERT INTO record_keys (account_id, environment, type, id, name, value, global)
  SELECT account_id, environment, type, id, CASE type WHEN 'product' THEN 'external_id' ELSE 'email' END,
    CASE type WHEN 'product' THEN data ->> 'external_id' ELSE data ->> 'email' END, false
  FROM records WHERE type IN ('product', 'user') AND data -> 'deleted' = 'false'`

/** `--others <count>x<size>`. */
export const parseOthers = (text: string): { readonly count: number; readonly size: number } => {
  const m = /^(\d+)x(\d+)$/.exec(text)
  if (!m) throw new Error(`--others: expected <count>x<size>, got ${text}`)
  return { count: Number(m[1]), size: Number(m[2]) }
}
