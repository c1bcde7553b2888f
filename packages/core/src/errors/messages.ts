/**
 * Error messages by language (§1 rule 3, §7, §5.3, §8): `Accept-Language` negotiation, one
 * message per code per language, and placeholder rendering. The `code` never varies with
 * language; only `message` does.
 */
import type { DetailCode } from "./errors.js"

/** The languages of the contract; the first one is the default. */
export const languages = ["en-US", "pt-BR", "es-ES", "fr-FR"] as const
export type Language = (typeof languages)[number]

export const defaultLanguage: Language = "en-US"

// ---------------------------------------------------------------------------------------------
// Accept-Language negotiation
// ---------------------------------------------------------------------------------------------

/** Headers longer than this are cut: nothing legitimate needs more. */
const maxHeaderLength = 4096
/** At most this many language ranges are considered. */
const maxRanges = 64

const rangePattern = /^(?:\*|[a-z]{1,8}(?:-[a-z0-9]{1,8})*)$/
const qPattern = /^q\s*=\s*(\d+(?:\.\d*)?|\.\d+)$/i

interface LanguageRange {
  /** Lower-cased range, `_` normalized to `-`; `*` for the wildcard. */
  readonly range: string
  readonly q: number
  /** Position in the header; earlier wins a tie. */
  readonly position: number
}

const parseAcceptLanguage = (header: string): ReadonlyArray<LanguageRange> => {
  const ranges: Array<LanguageRange> = []
  const parts = header.slice(0, maxHeaderLength).split(",")
  for (const part of parts) {
    if (ranges.length >= maxRanges) break
    const [rawRange, ...params] = part.split(";")
    const range = (rawRange ?? "").trim().toLowerCase().replace(/_/g, "-")
    if (!rangePattern.test(range)) continue
    let q = 1
    let valid = true
    for (const rawParam of params) {
      const param = rawParam.trim()
      if (param === "") continue
      if (/^q\s*=/i.test(param)) {
        const match = qPattern.exec(param)
        const value = match?.[1] === undefined ? Number.NaN : Number(match[1])
        if (!Number.isFinite(value) || value < 0 || value > 1) {
          valid = false
          break
        }
        q = value
      }
      // Other parameters are not defined for Accept-Language and are ignored.
    }
    if (valid) ranges.push({ range, q, position: ranges.length })
  }
  return ranges
}

const primarySubtag = (tag: string): string => tag.split("-")[0] ?? tag

interface Quality {
  readonly q: number
  readonly position: number
}

/**
 * The quality of one supported language under the parsed ranges, RFC 4647 / RFC 9110 style:
 * an exact range wins, then the most specific prefix range (`pt` for `pt-BR`), then a range of
 * the same primary language with another region (`fr-CA` for `fr-FR`, only when accepted),
 * then `*`. `undefined` when nothing in the header speaks about the language.
 */
const qualityOf = (language: Language, ranges: ReadonlyArray<LanguageRange>): Quality | undefined => {
  const tag = language.toLowerCase()
  const exact = ranges.find((r) => r.range === tag)
  if (exact !== undefined) return exact

  let prefix: LanguageRange | undefined
  for (const r of ranges) {
    if (r.range !== "*" && tag.startsWith(`${r.range}-`)) {
      if (prefix === undefined || r.range.length > prefix.range.length) prefix = r
    }
  }
  if (prefix !== undefined) return prefix

  const primary = primarySubtag(tag)
  let sibling: LanguageRange | undefined
  for (const r of ranges) {
    if (r.range !== "*" && r.q > 0 && primarySubtag(r.range) === primary) {
      if (sibling === undefined || r.q > sibling.q) sibling = r
    }
  }
  if (sibling !== undefined) return sibling

  return ranges.find((r) => r.range === "*")
}

/**
 * The language of the error messages for an `Accept-Language` header (§1 rule 3). Honors
 * q-values (q=0 excludes), `*`, case-insensitive tags and language-only or other-region tags
 * (`pt`, `fr-CA`). Defaults to `en-US` when the header is absent, unparseable or matches
 * nothing acceptable. Never throws.
 */
export const negotiateLanguage = (acceptLanguage: string | undefined): Language => {
  if (typeof acceptLanguage !== "string" || acceptLanguage.trim() === "") return defaultLanguage
  try {
    const ranges = parseAcceptLanguage(acceptLanguage)
    if (ranges.length === 0) return defaultLanguage
    let best: { readonly language: Language; readonly quality: Quality } | undefined
    for (const language of languages) {
      const quality = qualityOf(language, ranges)
      if (quality === undefined || quality.q <= 0) continue
      if (
        best === undefined ||
        quality.q > best.quality.q ||
        (quality.q === best.quality.q && quality.position < best.quality.position)
      ) {
        best = { language, quality }
      }
    }
    return best?.language ?? defaultLanguage
  } catch {
    return defaultLanguage
  }
}

// ---------------------------------------------------------------------------------------------
// Catalog
// ---------------------------------------------------------------------------------------------

/** One message for every code; a missing or extra code is a compile error. */
export type MessageCatalog = { readonly [C in DetailCode]: string }

const enUS: MessageCatalog = {
  unauthenticated: "Authentication is required: the API credential is missing, has an unrecognized format or is unknown.",
  credential_revoked: "The API credential has been revoked.",
  credential_suspended: "The API credential is suspended.",
  credential_expired: "The API credential has expired.",
  ambiguous_credentials:
    "The credentials in the request are ambiguous; send a single credential and, in human mode, an access token.",
  human_context_required: "This credential requires human mode: send an administrator access token.",
  invalid_access_token: "The administrator access token is invalid, expired or revoked.",
  instance_blocked: "The account is blocked or has been removed.",
  instance_unavailable: "The account is not available to the API.",
  credential_state_unverifiable: "The credential state could not be verified. Try again later.",
  permission_denied: "You do not have permission to perform this operation.",
  not_found: "The requested resource was not found.",
  operation_not_catalogued: "The route is not a recognized public operation.",
  not_acceptable: "The Accept header must allow application/json.",
  unsupported_media_type: "The request Content-Type is not accepted by this operation (expected: {expected}).",
  payload_too_large: "The request body exceeds the 1 MiB limit.",
  malformed_json: "The request body is not valid JSON or is not a JSON object.",
  json_too_deep: "The request body exceeds the maximum JSON nesting depth of 16 levels.",
  invalid_utf8: "The request contains invalid UTF-8 bytes.",
  validation_failed: "One or more values are invalid; see the details for each problem.",
  unknown_field: "Unknown field: it is not part of the request schema.",
  unknown_parameter: "Unknown query parameter: it is not part of the operation schema.",
  invalid_cursor: "The pagination cursor is invalid, does not match the sort order or is older than 24 hours.",
  method_not_allowed: "This HTTP method is not allowed on this route (allowed methods: {allowed}).",
  operation_sunset: "This operation is no longer available: its announced sunset date has passed.",
  revision_mismatch: "The If-Match revision does not match the current revision of the resource.",
  if_match_invalid: "The If-Match header is malformed.",
  invalid_transition: "The requested state change is not available from the current state.",
  credential_not_removable: "The credential has usage history and cannot be deleted; revoke it instead.",
  delegation_limit_exceeded: "The policy grants more than the issuing credential holds.",
  idempotency_key_required: "This operation requires an Idempotency-Key header.",
  idempotency_key_invalid: "The Idempotency-Key is malformed; it must be 1 to 128 characters from A-Z, a-z, 0-9, period, underscore, colon and hyphen.",
  idempotency_key_reused: "The Idempotency-Key was already used with a different request body or resource.",
  idempotency_in_progress: "A request with the same Idempotency-Key is still being processed.",
  result_uncertain: "The first attempt with this Idempotency-Key recorded no result; retry the request.",
  secret_not_replayable: "The recorded result contains a secret that is shown only once and cannot be replayed.",
  result_not_replayable: "The recorded result for this Idempotency-Key cannot be replayed.",
  operation_type_unknown: "The operation type is not supported.",
  duplicate_item_key: "Two or more batch items share the same key.",
  operation_backlog_exceeded: "The account already has the maximum number of queued or running operations.",
  operation_not_cancelable: "The operation has already finished and cannot be canceled.",
  operation_not_resumable: "The operation cannot be resumed: it has not failed or has no recoverable items.",
  item_invalid: "The batch item payload does not have the expected shape.",
  too_many_items: "The list contains too many items (at most {max}).",
  operation_ownership_lost: "Another attempt has taken over this operation.",
  domain_rule_violation: "The request violates a business rule.",
  http_error: "The HTTP request could not be processed.",
  internal_error: "An unexpected error occurred. Try again later.",
  audit_unavailable: "The audit trail could not be recorded. Try again later.",
  rate_limit_exceeded: "The rate limit was exceeded (retry in {retry_after_seconds} seconds).",
  rate_limiter_unavailable: "The rate limiter is unavailable. Try again later.",
  state_conflict: "The current state of the resource does not allow this operation.",
  upload_integrity_mismatch: "The uploaded file does not match the declared size, checksum or type.",
  storage_unavailable: "File storage is unavailable. Try again later.",
  sandbox_only: "This operation is available only for sandbox accounts.",
  replica_readonly: "This record is a replica and is read-only, except for the status field.",
  order_set_mismatch: "The reorder set differs from the set of items in scope.",
  hierarchy_violation: "The change would break the hierarchy.",
  banner_type_unavailable: "This banner type is not available for the account.",
  already_exists: "A resource with this identifier already exists.",
  plan_limit_reached: "The account plan does not allow more resources of this type (at most {limit} {resource}).",
  email_recently_sent: "This email was sent recently; wait before sending it again.",
  feature_disabled: "This feature is disabled in the account settings.",
  tag_in_use: "The tag is in use and cannot be deleted.",
  template_not_previewable: "The template has nothing to preview.",
  format_unsupported: "The requested format is not supported by this resource.",
  human_mode_not_allowed: "This credential does not allow human mode.",
  admin_not_eligible: "The administrator has no active link to this credential.",
  tenant_mismatch: "The administrator belongs to a different account.",
  too_many_streams: "The maximum number of open event streams has been reached (5 per credential, 20 per account).",
  stream_busy: "The event stream already has an open connection.",
  cursor_expired: "The cursor points to an event that is no longer retained.",
  sandbox_required: "This test scenario requires a sandbox account.",
  unsupported_resource: "This resource type is not accepted by the operation.",
  plan_invalid: "The declarative manifest is invalid.",
  plan_stale: "The plan was computed against a state that has since changed; compute a new plan.",
  plan_expired: "The plan has expired; compute a new plan.",
  invalid: "The value is not a valid public ID (expected {prefix} followed by 9 letters or digits encoding a number from 1 to 2^53 - 1).",
  required: "This value is required.",
  invalid_type: "The value has the wrong type (expected: {expected}).",
  invalid_value: "The value is not accepted (allowed values: {allowed}).",
  too_long: "The value is too long (at most {max} characters).",
  too_short: "The value is too short (at least {min} characters).",
  out_of_range: "The value is out of the allowed range (between {min} and {max}).",
  not_allowed: "The value is not allowed in this context."
}

const ptBR: MessageCatalog = {
  unauthenticated:
    "Autenticação necessária: a credencial da API está ausente, tem formato não reconhecido ou é desconhecida.",
  credential_revoked: "A credencial da API foi revogada.",
  credential_suspended: "A credencial da API está suspensa.",
  credential_expired: "A credencial da API expirou.",
  ambiguous_credentials:
    "As credenciais da requisição são ambíguas; envie uma única credencial e, no modo humano, um token de acesso.",
  human_context_required: "Esta credencial exige o modo humano: envie um token de acesso de administrador.",
  invalid_access_token: "O token de acesso do administrador é inválido, expirou ou foi revogado.",
  instance_blocked: "A conta está bloqueada ou foi removida.",
  instance_unavailable: "A conta não está disponível para a API.",
  credential_state_unverifiable: "Não foi possível verificar o estado da credencial. Tente novamente mais tarde.",
  permission_denied: "Você não tem permissão para realizar esta operação.",
  not_found: "O recurso solicitado não foi encontrado.",
  operation_not_catalogued: "A rota não corresponde a uma operação pública reconhecida.",
  not_acceptable: "O cabeçalho Accept deve permitir application/json.",
  unsupported_media_type: "O Content-Type da requisição não é aceito por esta operação (esperado: {expected}).",
  payload_too_large: "O corpo da requisição excede o limite de 1 MiB.",
  malformed_json: "O corpo da requisição não é um JSON válido ou não é um objeto JSON.",
  json_too_deep: "O corpo da requisição excede a profundidade máxima de aninhamento JSON de 16 níveis.",
  invalid_utf8: "A requisição contém bytes UTF-8 inválidos.",
  validation_failed: "Um ou mais valores são inválidos; veja os detalhes de cada problema.",
  unknown_field: "Campo desconhecido: ele não faz parte do esquema da requisição.",
  unknown_parameter: "Parâmetro de consulta desconhecido: ele não faz parte do esquema da operação.",
  invalid_cursor: "O cursor de paginação é inválido, não corresponde à ordenação ou tem mais de 24 horas.",
  method_not_allowed: "Este método HTTP não é permitido nesta rota (métodos permitidos: {allowed}).",
  operation_sunset: "Esta operação não está mais disponível: a data de desativação anunciada já passou.",
  revision_mismatch: "A revisão informada em If-Match não corresponde à revisão atual do recurso.",
  if_match_invalid: "O cabeçalho If-Match está em formato inválido.",
  invalid_transition: "A mudança de estado solicitada não está disponível a partir do estado atual.",
  credential_not_removable: "A credencial tem histórico de uso e não pode ser excluída; revogue-a.",
  delegation_limit_exceeded: "A política concede mais do que a credencial emissora possui.",
  idempotency_key_required: "Esta operação exige o cabeçalho Idempotency-Key.",
  idempotency_key_invalid: "A Idempotency-Key está em formato inválido; ela deve ter de 1 a 128 caracteres entre A-Z, a-z, 0-9, ponto, sublinhado, dois-pontos e hífen.",
  idempotency_key_reused: "A Idempotency-Key já foi usada com outro corpo de requisição ou outro recurso.",
  idempotency_in_progress: "Uma requisição com a mesma Idempotency-Key ainda está sendo processada.",
  result_uncertain: "A primeira tentativa com esta Idempotency-Key não registrou resultado; repita a requisição.",
  secret_not_replayable:
    "O resultado registrado contém um segredo exibido uma única vez e não pode ser reproduzido.",
  result_not_replayable: "O resultado registrado para esta Idempotency-Key não pode ser reproduzido.",
  operation_type_unknown: "O tipo de operação não é suportado.",
  duplicate_item_key: "Dois ou mais itens do lote compartilham a mesma chave.",
  operation_backlog_exceeded: "A conta já atingiu o número máximo de operações na fila ou em execução.",
  operation_not_cancelable: "A operação já foi concluída e não pode ser cancelada.",
  operation_not_resumable: "A operação não pode ser retomada: ela não falhou ou não tem itens recuperáveis.",
  item_invalid: "O conteúdo do item do lote não tem o formato esperado.",
  too_many_items: "A lista contém itens demais (no máximo {max}).",
  operation_ownership_lost: "Outra tentativa assumiu esta operação.",
  domain_rule_violation: "A requisição viola uma regra de negócio.",
  http_error: "Não foi possível processar a requisição HTTP.",
  internal_error: "Ocorreu um erro inesperado. Tente novamente mais tarde.",
  audit_unavailable: "Não foi possível registrar a trilha de auditoria. Tente novamente mais tarde.",
  rate_limit_exceeded: "O limite de requisições foi excedido (tente novamente em {retry_after_seconds} segundos).",
  rate_limiter_unavailable: "O limitador de requisições está indisponível. Tente novamente mais tarde.",
  state_conflict: "O estado atual do recurso não permite esta operação.",
  upload_integrity_mismatch: "O arquivo enviado não corresponde ao tamanho, checksum ou tipo declarados.",
  storage_unavailable: "O armazenamento de arquivos está indisponível. Tente novamente mais tarde.",
  sandbox_only: "Esta operação está disponível apenas para contas sandbox.",
  replica_readonly: "Este registro é uma réplica e é somente leitura, exceto pelo campo status.",
  order_set_mismatch: "O conjunto da reordenação difere do conjunto de itens no escopo.",
  hierarchy_violation: "A alteração quebraria a hierarquia.",
  banner_type_unavailable: "Este tipo de banner não está disponível para a conta.",
  already_exists: "Já existe um recurso com este identificador.",
  plan_limit_reached: "O plano da conta não permite mais recursos deste tipo (no máximo {limit} {resource}).",
  email_recently_sent: "Este e-mail foi enviado recentemente; aguarde antes de enviá-lo novamente.",
  feature_disabled: "Esta funcionalidade está desativada nas configurações da conta.",
  tag_in_use: "A tag está em uso e não pode ser excluída.",
  template_not_previewable: "O modelo não tem nada para pré-visualizar.",
  format_unsupported: "O formato solicitado não é suportado por este recurso.",
  human_mode_not_allowed: "Esta credencial não permite o modo humano.",
  admin_not_eligible: "O administrador não tem vínculo ativo com esta credencial.",
  tenant_mismatch: "O administrador pertence a outra conta.",
  too_many_streams: "O número máximo de streams de eventos abertos foi atingido (5 por credencial, 20 por conta).",
  stream_busy: "O stream de eventos já tem uma conexão aberta.",
  cursor_expired: "O cursor aponta para um evento que não está mais retido.",
  sandbox_required: "Este cenário de teste exige uma conta sandbox.",
  unsupported_resource: "Este tipo de recurso não é aceito pela operação.",
  plan_invalid: "O manifesto declarativo é inválido.",
  plan_stale: "O plano foi calculado sobre um estado que mudou desde então; gere um novo plano.",
  plan_expired: "O plano expirou; gere um novo plano.",
  invalid: "O valor não é um ID público válido (esperado {prefix} seguido de 9 letras ou dígitos que codificam um número de 1 a 2^53 - 1).",
  required: "Este valor é obrigatório.",
  invalid_type: "O valor tem o tipo errado (esperado: {expected}).",
  invalid_value: "O valor não é aceito (valores permitidos: {allowed}).",
  too_long: "O valor é longo demais (no máximo {max} caracteres).",
  too_short: "O valor é curto demais (no mínimo {min} caracteres).",
  out_of_range: "O valor está fora do intervalo permitido (entre {min} e {max}).",
  not_allowed: "O valor não é permitido neste contexto."
}

const esES: MessageCatalog = {
  unauthenticated:
    "Se requiere autenticación: la credencial de la API falta, tiene un formato no reconocido o es desconocida.",
  credential_revoked: "La credencial de la API ha sido revocada.",
  credential_suspended: "La credencial de la API está suspendida.",
  credential_expired: "La credencial de la API ha caducado.",
  ambiguous_credentials:
    "Las credenciales de la solicitud son ambiguas; envíe una sola credencial y, en modo humano, un token de acceso.",
  human_context_required: "Esta credencial requiere el modo humano: envíe un token de acceso de administrador.",
  invalid_access_token: "El token de acceso del administrador no es válido, ha caducado o ha sido revocado.",
  instance_blocked: "La cuenta está bloqueada o ha sido eliminada.",
  instance_unavailable: "La cuenta no está disponible para la API.",
  credential_state_unverifiable:
    "No se ha podido verificar el estado de la credencial. Vuelva a intentarlo más tarde.",
  permission_denied: "No tiene permiso para realizar esta operación.",
  not_found: "No se ha encontrado el recurso solicitado.",
  operation_not_catalogued: "La ruta no corresponde a ninguna operación pública reconocida.",
  not_acceptable: "La cabecera Accept debe admitir application/json.",
  unsupported_media_type: "Esta operación no admite el Content-Type de la solicitud (se espera: {expected}).",
  payload_too_large: "El cuerpo de la solicitud supera el límite de 1 MiB.",
  malformed_json: "El cuerpo de la solicitud no es un JSON válido o no es un objeto JSON.",
  json_too_deep: "El cuerpo de la solicitud supera la profundidad máxima de anidamiento JSON de 16 niveles.",
  invalid_utf8: "La solicitud contiene bytes UTF-8 no válidos.",
  validation_failed: "Uno o varios valores no son válidos; consulte los detalles de cada problema.",
  unknown_field: "Campo desconocido: no forma parte del esquema de la solicitud.",
  unknown_parameter: "Parámetro de consulta desconocido: no forma parte del esquema de la operación.",
  invalid_cursor: "El cursor de paginación no es válido, no coincide con la ordenación o tiene más de 24 horas.",
  method_not_allowed: "Este método HTTP no está permitido en esta ruta (métodos permitidos: {allowed}).",
  operation_sunset: "Esta operación ya no está disponible: la fecha de retirada anunciada ya ha pasado.",
  revision_mismatch: "La revisión indicada en If-Match no coincide con la revisión actual del recurso.",
  if_match_invalid: "La cabecera If-Match tiene un formato no válido.",
  invalid_transition: "El cambio de estado solicitado no está disponible desde el estado actual.",
  credential_not_removable: "La credencial tiene historial de uso y no se puede eliminar; revóquela en su lugar.",
  delegation_limit_exceeded: "La política concede más de lo que posee la credencial emisora.",
  idempotency_key_required: "Esta operación requiere la cabecera Idempotency-Key.",
  idempotency_key_invalid: "La Idempotency-Key tiene un formato no válido; debe tener entre 1 y 128 caracteres de A-Z, a-z, 0-9, punto, guion bajo, dos puntos y guion.",
  idempotency_key_reused: "La Idempotency-Key ya se ha usado con otro cuerpo de solicitud u otro recurso.",
  idempotency_in_progress: "Una solicitud con la misma Idempotency-Key todavía se está procesando.",
  result_uncertain:
    "El primer intento con esta Idempotency-Key no registró ningún resultado; repita la solicitud.",
  secret_not_replayable:
    "El resultado registrado contiene un secreto que solo se muestra una vez y no se puede reproducir.",
  result_not_replayable: "El resultado registrado para esta Idempotency-Key no se puede reproducir.",
  operation_type_unknown: "El tipo de operación no está admitido.",
  duplicate_item_key: "Dos o más elementos del lote comparten la misma clave.",
  operation_backlog_exceeded:
    "La cuenta ya ha alcanzado el número máximo de operaciones en cola o en ejecución.",
  operation_not_cancelable: "La operación ya ha finalizado y no se puede cancelar.",
  operation_not_resumable:
    "La operación no se puede reanudar: no ha fallado o no tiene elementos recuperables.",
  item_invalid: "El contenido del elemento del lote no tiene la forma esperada.",
  too_many_items: "La lista contiene demasiados elementos (como máximo {max}).",
  operation_ownership_lost: "Otro intento ha tomado el control de esta operación.",
  domain_rule_violation: "La solicitud infringe una regla de negocio.",
  http_error: "No se ha podido procesar la solicitud HTTP.",
  internal_error: "Se ha producido un error inesperado. Vuelva a intentarlo más tarde.",
  audit_unavailable: "No se ha podido escribir el registro de auditoría. Vuelva a intentarlo más tarde.",
  rate_limit_exceeded:
    "Se ha superado el límite de solicitudes (vuelva a intentarlo dentro de {retry_after_seconds} segundos).",
  rate_limiter_unavailable: "El limitador de solicitudes no está disponible. Vuelva a intentarlo más tarde.",
  state_conflict: "El estado actual del recurso no permite esta operación.",
  upload_integrity_mismatch:
    "El archivo subido no coincide con el tamaño, la suma de comprobación o el tipo declarados.",
  storage_unavailable: "El almacenamiento de archivos no está disponible. Vuelva a intentarlo más tarde.",
  sandbox_only: "Esta operación solo está disponible para cuentas sandbox.",
  replica_readonly: "Este registro es una réplica y es de solo lectura, salvo el campo status.",
  order_set_mismatch: "El conjunto de la reordenación difiere del conjunto de elementos del ámbito.",
  hierarchy_violation: "El cambio rompería la jerarquía.",
  banner_type_unavailable: "Este tipo de banner no está disponible para la cuenta.",
  already_exists: "Ya existe un recurso con este identificador.",
  plan_limit_reached: "El plan de la cuenta no permite más recursos de este tipo (como máximo {limit} {resource}).",
  email_recently_sent:
    "Este correo electrónico se ha enviado recientemente; espere antes de volver a enviarlo.",
  feature_disabled: "Esta funcionalidad está desactivada en la configuración de la cuenta.",
  tag_in_use: "La etiqueta está en uso y no se puede eliminar.",
  template_not_previewable: "La plantilla no tiene nada que previsualizar.",
  format_unsupported: "El formato solicitado no es compatible con este recurso.",
  human_mode_not_allowed: "Esta credencial no permite el modo humano.",
  admin_not_eligible: "El administrador no tiene un vínculo activo con esta credencial.",
  tenant_mismatch: "El administrador pertenece a otra cuenta.",
  too_many_streams:
    "Se ha alcanzado el número máximo de flujos de eventos abiertos (5 por credencial, 20 por cuenta).",
  stream_busy: "El flujo de eventos ya tiene una conexión abierta.",
  cursor_expired: "El cursor apunta a un evento que ya no se conserva.",
  sandbox_required: "Este escenario de prueba requiere una cuenta sandbox.",
  unsupported_resource: "La operación no acepta este tipo de recurso.",
  plan_invalid: "El manifiesto declarativo no es válido.",
  plan_stale: "El plan se calculó sobre un estado que ha cambiado desde entonces; genere un plan nuevo.",
  plan_expired: "El plan ha caducado; genere un plan nuevo.",
  invalid: "El valor no es un ID público válido (se espera {prefix} seguido de 9 letras o dígitos que codifican un número de 1 a 2^53 - 1).",
  required: "Este valor es obligatorio.",
  invalid_type: "El valor tiene un tipo incorrecto (se esperaba: {expected}).",
  invalid_value: "El valor no se admite (valores permitidos: {allowed}).",
  too_long: "El valor es demasiado largo (como máximo {max} caracteres).",
  too_short: "El valor es demasiado corto (como mínimo {min} caracteres).",
  out_of_range: "El valor está fuera del intervalo permitido (entre {min} y {max}).",
  not_allowed: "El valor no está permitido en este contexto."
}

const frFR: MessageCatalog = {
  unauthenticated:
    "Authentification requise : l'identifiant d'API est absent, dans un format non reconnu ou inconnu.",
  credential_revoked: "L'identifiant d'API a été révoqué.",
  credential_suspended: "L'identifiant d'API est suspendu.",
  credential_expired: "L'identifiant d'API a expiré.",
  ambiguous_credentials:
    "Les identifiants de la requête sont ambigus ; envoyez un seul identifiant et, en mode humain, un jeton d'accès.",
  human_context_required: "Cet identifiant exige le mode humain : envoyez un jeton d'accès d'administrateur.",
  invalid_access_token: "Le jeton d'accès de l'administrateur est invalide, expiré ou révoqué.",
  instance_blocked: "Le compte est bloqué ou a été supprimé.",
  instance_unavailable: "Le compte n'est pas disponible pour l'API.",
  credential_state_unverifiable: "L'état de l'identifiant n'a pas pu être vérifié. Réessayez plus tard.",
  permission_denied: "Vous n'avez pas l'autorisation d'effectuer cette opération.",
  not_found: "La ressource demandée est introuvable.",
  operation_not_catalogued: "La route ne correspond à aucune opération publique reconnue.",
  not_acceptable: "L'en-tête Accept doit autoriser application/json.",
  unsupported_media_type: "Le Content-Type de la requête n'est pas accepté par cette opération (attendu : {expected}).",
  payload_too_large: "Le corps de la requête dépasse la limite de 1 Mio.",
  malformed_json: "Le corps de la requête n'est pas un JSON valide ou n'est pas un objet JSON.",
  json_too_deep: "Le corps de la requête dépasse la profondeur d'imbrication JSON maximale de 16 niveaux.",
  invalid_utf8: "La requête contient des octets UTF-8 invalides.",
  validation_failed: "Une ou plusieurs valeurs sont invalides ; consultez les détails de chaque problème.",
  unknown_field: "Champ inconnu : il ne fait pas partie du schéma de la requête.",
  unknown_parameter: "Paramètre de requête inconnu : il ne fait pas partie du schéma de l'opération.",
  invalid_cursor:
    "Le curseur de pagination est invalide, ne correspond pas au tri ou date de plus de 24 heures.",
  method_not_allowed: "Cette méthode HTTP n'est pas autorisée sur cette route (méthodes autorisées : {allowed}).",
  operation_sunset: "Cette opération n'est plus disponible : sa date de retrait annoncée est passée.",
  revision_mismatch:
    "La révision indiquée dans If-Match ne correspond pas à la révision actuelle de la ressource.",
  if_match_invalid: "L'en-tête If-Match est mal formé.",
  invalid_transition: "Le changement d'état demandé n'est pas disponible depuis l'état actuel.",
  credential_not_removable:
    "L'identifiant a un historique d'utilisation et ne peut pas être supprimé ; révoquez-le plutôt.",
  delegation_limit_exceeded: "La politique accorde plus que ce que détient l'identifiant émetteur.",
  idempotency_key_required: "Cette opération exige l'en-tête Idempotency-Key.",
  idempotency_key_invalid: "L'Idempotency-Key est mal formée ; elle doit comporter de 1 à 128 caractères parmi A-Z, a-z, 0-9, point, tiret bas, deux-points et tiret.",
  idempotency_key_reused:
    "L'Idempotency-Key a déjà été utilisée avec un autre corps de requête ou une autre ressource.",
  idempotency_in_progress: "Une requête avec la même Idempotency-Key est toujours en cours de traitement.",
  result_uncertain:
    "La première tentative avec cette Idempotency-Key n'a enregistré aucun résultat ; renvoyez la requête.",
  secret_not_replayable:
    "Le résultat enregistré contient un secret affiché une seule fois et ne peut pas être rejoué.",
  result_not_replayable: "Le résultat enregistré pour cette Idempotency-Key ne peut pas être rejoué.",
  operation_type_unknown: "Le type d'opération n'est pas pris en charge.",
  duplicate_item_key: "Deux éléments ou plus du lot partagent la même clé.",
  operation_backlog_exceeded:
    "Le compte a déjà atteint le nombre maximal d'opérations en file d'attente ou en cours.",
  operation_not_cancelable: "L'opération est déjà terminée et ne peut pas être annulée.",
  operation_not_resumable:
    "L'opération ne peut pas être reprise : elle n'a pas échoué ou n'a aucun élément récupérable.",
  item_invalid: "Le contenu de l'élément du lot n'a pas la forme attendue.",
  too_many_items: "La liste contient trop d'éléments (au maximum {max}).",
  operation_ownership_lost: "Une autre tentative a pris le contrôle de cette opération.",
  domain_rule_violation: "La requête enfreint une règle métier.",
  http_error: "La requête HTTP n'a pas pu être traitée.",
  internal_error: "Une erreur inattendue s'est produite. Réessayez plus tard.",
  audit_unavailable: "Le journal d'audit n'a pas pu être enregistré. Réessayez plus tard.",
  rate_limit_exceeded: "La limite de requêtes a été dépassée (réessayez dans {retry_after_seconds} secondes).",
  rate_limiter_unavailable: "Le limiteur de débit est indisponible. Réessayez plus tard.",
  state_conflict: "L'état actuel de la ressource ne permet pas cette opération.",
  upload_integrity_mismatch:
    "Le fichier envoyé ne correspond pas à la taille, à la somme de contrôle ou au type déclarés.",
  storage_unavailable: "Le stockage de fichiers est indisponible. Réessayez plus tard.",
  sandbox_only: "Cette opération n'est disponible que pour les comptes sandbox.",
  replica_readonly: "Cet enregistrement est une réplique en lecture seule, sauf le champ status.",
  order_set_mismatch: "L'ensemble à réordonner diffère de l'ensemble des éléments concernés.",
  hierarchy_violation: "La modification romprait la hiérarchie.",
  banner_type_unavailable: "Ce type de bannière n'est pas disponible pour le compte.",
  already_exists: "Une ressource avec cet identifiant existe déjà.",
  plan_limit_reached: "Le forfait du compte ne permet pas d'autres ressources de ce type (au maximum {limit} {resource}).",
  email_recently_sent: "Cet e-mail a été envoyé récemment ; patientez avant de le renvoyer.",
  feature_disabled: "Cette fonctionnalité est désactivée dans les paramètres du compte.",
  tag_in_use: "L'étiquette est utilisée et ne peut pas être supprimée.",
  template_not_previewable: "Le modèle n'a rien à prévisualiser.",
  format_unsupported: "Le format demandé n'est pas pris en charge par cette ressource.",
  human_mode_not_allowed: "Cet identifiant n'autorise pas le mode humain.",
  admin_not_eligible: "L'administrateur n'a pas de lien actif avec cet identifiant.",
  tenant_mismatch: "L'administrateur appartient à un autre compte.",
  too_many_streams:
    "Le nombre maximal de flux d'événements ouverts est atteint (5 par identifiant, 20 par compte).",
  stream_busy: "Le flux d'événements a déjà une connexion ouverte.",
  cursor_expired: "Le curseur pointe vers un événement qui n'est plus conservé.",
  sandbox_required: "Ce scénario de test nécessite un compte sandbox.",
  unsupported_resource: "Ce type de ressource n'est pas accepté par l'opération.",
  plan_invalid: "Le manifeste déclaratif est invalide.",
  plan_stale: "Le plan a été calculé sur un état qui a changé depuis ; générez un nouveau plan.",
  plan_expired: "Le plan a expiré ; générez un nouveau plan.",
  invalid: "La valeur n'est pas un ID public valide (attendu : {prefix} suivi de 9 lettres ou chiffres codant un nombre de 1 à 2^53 - 1).",
  required: "Cette valeur est obligatoire.",
  invalid_type: "La valeur n'a pas le bon type (attendu : {expected}).",
  invalid_value: "La valeur n'est pas acceptée (valeurs autorisées : {allowed}).",
  too_long: "La valeur est trop longue (au maximum {max} caractères).",
  too_short: "La valeur est trop courte (au minimum {min} caractères).",
  out_of_range: "La valeur est hors de la plage autorisée (entre {min} et {max}).",
  not_allowed: "La valeur n'est pas autorisée dans ce contexte."
}

/** Every message of every code in every language. */
export const messages: { readonly [L in Language]: { readonly [C in DetailCode]: string } } = {
  "en-US": enUS,
  "pt-BR": ptBR,
  "es-ES": esES,
  "fr-FR": frFR
}

/**
 * Messages that name the problem more exactly than the code's own, chosen by the error's or
 * the item's `reason` (`<code>.<reason>`): a well-formed ID in a body whose record does not
 * exist is `validation_failed` with reason `not_found`, and says so.
 */
export const reasonMessages: { readonly [L in Language]: Readonly<Record<string, string>> } = {
  "en-US": {
    "validation_failed.not_found": "No record with this ID exists, or it is outside the credential's scope.",
    "required.limited_credential": "A credential limited to some records must name here the products it reaches: a webhook delivers only what its credential may read.",
    "template_not_previewable.no_template": "The product has no certificate template yet: replace it first, then preview it.",
    "template_not_previewable.no_content": "The certificate template has neither texts.content nor fields: there is nothing to preview.",
    "invalid_value.unsupported_image_type": "The image must be a PNG or JPEG file.",
    "invalid_value.malformed_event_type": "An event type is <resource>.<verb> in lower case (user.created); a pattern puts * for a whole part (user.*, *.deleted), and * alone is every type. A partial wildcard (us*.created) is not accepted.",
    "already_exists.active_enrollment": "The user already has an active enrollment in this product.",
    "state_conflict.enrollment_not_active": "The enrollment is not active (expired, canceled, or past its expiry).",
    "state_conflict.enrollment_canceled": "The enrollment is canceled and cannot change.",
    "state_conflict.revoked": "The user's access through this delivery was taken away (a refund, a chargeback or a cancellation).",
    "state_conflict.no_access": "The user has no active access through this delivery (it expired, or the user was removed).",
    "too_long.utf8_bytes": "The value is too large (at most {max} bytes once encoded in UTF-8; a character takes 1 to 4 bytes).",
    "human_context_required.access_token_missing": "X-API-Key asks for human mode, which also needs Authorization: Bearer <administrator access token>. To call as the credential itself, send its secret as Authorization: Bearer without X-API-Key.",
    "human_context_required.credential_requires_human_mode": "This credential only works in human mode: send its secret as X-API-Key and an administrator access token as Authorization: Bearer.",
    "invalid_transition.use_cancellations": "An enrollment is canceled through its cancellations operation, not by a change of status.",
    "state_conflict.expires_at_passed": "The enrollment's expiry has passed: send a new expires_at to reactivate it.",
    "state_conflict.lesson_not_published": "The lesson is not published: a lesson is published with its module (POST /products/<product_id>/modules/<module_id>/publications).",
    "validation_failed.not_after_start": "The expiry must be after the start and in the future.",
    "validation_failed.empty_range": "The end of the range must be after its start.",
    "validation_failed.inconsistent_with_status": "The percent does not agree with the status (completed is 100, not started is 0).",
    "validation_failed.requires_completed": "completed_at is only accepted with the status completed.",
    "validation_failed.in_the_future": "The instant is in the future.",
    "validation_failed.self_reference": "A module cannot wait for its own completion.",
    "state_conflict.not_enrolled": "The user has no active enrollment in the exam's product.",
    "state_conflict.retake_not_allowed": "The exam allows one attempt per user, and this user already made it.",
    "state_conflict.already_passed": "The exam allows a new attempt only after a failed one, and this user already passed it.",
    "state_conflict.retake_too_soon": "The exam asks for a wait between attempts: the next one is possible from {available_at}.",
    "state_conflict.no_questions": "The exam has no questions to answer.",
    "state_conflict.exam_linked": "Lessons link this exam: unlink it from them (their exam_id) first.",
    "state_conflict.term_accepted": "Users accepted this legal term: it stays, as the record of what they accepted.",
    "validation_failed.platform_term": "The platform's legal term belongs to no product: leave product_id out.",
    "state_conflict.attempt_final": "An exam attempt is final: it cannot be changed or removed.",
    "invalid_value.no_correct_alternative": "At least one alternative must be marked correct.",
    "invalid_value.single_choice": "A single-choice question takes at most one alternative.",
    "invalid_value.questions_count": "The exam shows {count} questions per attempt: answer exactly that many."
  },
  "pt-BR": {
    "validation_failed.not_found": "Não existe registro com este ID, ou ele está fora do escopo da credencial.",
    "required.limited_credential": "Uma credencial limitada a alguns registros deve indicar aqui os produtos que alcança: um webhook entrega apenas o que sua credencial pode ler.",
    "template_not_previewable.no_template": "O produto ainda não tem modelo de certificado: substitua-o primeiro, depois pré-visualize.",
    "template_not_previewable.no_content": "O modelo de certificado não tem texts.content nem fields: não há nada para pré-visualizar.",
    "invalid_value.unsupported_image_type": "A imagem deve ser um arquivo PNG ou JPEG.",
    "invalid_value.malformed_event_type": "Um tipo de evento é <recurso>.<verbo> em minúsculas (user.created); um padrão põe * no lugar de uma parte inteira (user.*, *.deleted), e * sozinho é todo tipo. Um curinga parcial (us*.created) não é aceito.",
    "already_exists.active_enrollment": "O usuário já tem uma matrícula ativa neste produto.",
    "state_conflict.enrollment_not_active": "A matrícula não está ativa (expirada, cancelada ou com a validade vencida).",
    "state_conflict.enrollment_canceled": "A matrícula está cancelada e não pode mudar.",
    "state_conflict.revoked": "O acesso do usuário por esta entrega foi retirado (um reembolso, um estorno ou um cancelamento).",
    "state_conflict.no_access": "O usuário não tem acesso ativo por esta entrega (expirou, ou o usuário foi removido).",
    "too_long.utf8_bytes": "O valor é grande demais (no máximo {max} bytes em UTF-8; um caractere ocupa de 1 a 4 bytes).",
    "human_context_required.access_token_missing": "X-API-Key pede o modo humano, que também precisa de Authorization: Bearer <token de acesso de administrador>. Para chamar como a própria credencial, envie o seu segredo em Authorization: Bearer, sem X-API-Key.",
    "human_context_required.credential_requires_human_mode": "Esta credencial só funciona no modo humano: envie o seu segredo em X-API-Key e um token de acesso de administrador em Authorization: Bearer.",
    "invalid_transition.use_cancellations": "Uma matrícula é cancelada pela operação de cancelamento, não por uma mudança de status.",
    "state_conflict.expires_at_passed": "A validade da matrícula já passou: envie um novo expires_at para reativá-la.",
    "state_conflict.lesson_not_published": "A aula não está publicada: uma aula é publicada com o seu módulo (POST /products/<product_id>/modules/<module_id>/publications).",
    "validation_failed.not_after_start": "A validade deve ser posterior ao início e estar no futuro.",
    "validation_failed.empty_range": "O fim do intervalo deve ser posterior ao seu início.",
    "validation_failed.inconsistent_with_status": "O percentual não condiz com o status (concluída é 100, não iniciada é 0).",
    "validation_failed.requires_completed": "completed_at só é aceito com o status completed.",
    "validation_failed.in_the_future": "O instante está no futuro.",
    "validation_failed.self_reference": "Um módulo não pode esperar pela própria conclusão.",
    "state_conflict.not_enrolled": "O usuário não tem matrícula ativa no produto da prova.",
    "state_conflict.retake_not_allowed": "A prova permite uma tentativa por usuário, e este usuário já a fez.",
    "state_conflict.already_passed": "A prova só permite nova tentativa após uma reprovação, e este usuário já foi aprovado.",
    "state_conflict.retake_too_soon": "A prova exige um intervalo entre tentativas: a próxima é possível a partir de {available_at}.",
    "state_conflict.no_questions": "A prova não tem questões a responder.",
    "state_conflict.exam_linked": "Há aulas ligadas a esta prova: desligue-a delas (o exam_id de cada uma) antes.",
    "state_conflict.term_accepted": "Usuários aceitaram este termo legal: ele permanece, como registro do que aceitaram.",
    "validation_failed.platform_term": "O termo legal da plataforma não pertence a nenhum produto: omita product_id.",
    "state_conflict.attempt_final": "Uma tentativa de prova é definitiva: não pode ser alterada nem removida.",
    "invalid_value.no_correct_alternative": "Ao menos uma alternativa deve ser marcada como correta.",
    "invalid_value.single_choice": "Uma questão de escolha única aceita no máximo uma alternativa.",
    "invalid_value.questions_count": "A prova mostra {count} questões por tentativa: responda exatamente essa quantidade."
  },
  "es-ES": {
    "validation_failed.not_found": "No existe ningún registro con este ID, o está fuera del alcance de la credencial.",
    "required.limited_credential": "Una credencial limitada a algunos registros debe indicar aquí los productos que alcanza: un webhook entrega solo lo que su credencial puede leer.",
    "template_not_previewable.no_template": "El producto aún no tiene plantilla de certificado: reemplácela primero y luego previsualícela.",
    "template_not_previewable.no_content": "La plantilla de certificado no tiene texts.content ni fields: no hay nada que previsualizar.",
    "invalid_value.unsupported_image_type": "La imagen debe ser un archivo PNG o JPEG.",
    "invalid_value.malformed_event_type": "Un tipo de evento es <recurso>.<verbo> en minúsculas (user.created); un patrón pone * en lugar de una parte entera (user.*, *.deleted), y * solo es todo tipo. No se admite un comodín parcial (us*.created).",
    "already_exists.active_enrollment": "El usuario ya tiene una inscripción activa en este producto.",
    "state_conflict.enrollment_not_active": "La inscripción no está activa (vencida, cancelada o pasada su fecha de vencimiento).",
    "state_conflict.enrollment_canceled": "La inscripción está cancelada y no puede cambiar.",
    "state_conflict.revoked": "El acceso del usuario por esta entrega fue retirado (un reembolso, un contracargo o una cancelación).",
    "state_conflict.no_access": "El usuario no tiene acceso activo por esta entrega (expiró, o el usuario fue eliminado).",
    "too_long.utf8_bytes": "El valor es demasiado grande (como máximo {max} bytes en UTF-8; un carácter ocupa de 1 a 4 bytes).",
    "human_context_required.access_token_missing": "X-API-Key pide el modo humano, que también necesita Authorization: Bearer <token de acceso de administrador>. Para llamar como la propia credencial, envíe su secreto en Authorization: Bearer, sin X-API-Key.",
    "human_context_required.credential_requires_human_mode": "Esta credencial solo funciona en modo humano: envíe su secreto en X-API-Key y un token de acceso de administrador en Authorization: Bearer.",
    "invalid_transition.use_cancellations": "Una inscripción se cancela con su operación de cancelación, no con un cambio de estado.",
    "state_conflict.expires_at_passed": "El vencimiento de la inscripción ya pasó: envíe un nuevo expires_at para reactivarla.",
    "state_conflict.lesson_not_published": "La lección no está publicada: una lección se publica con su módulo (POST /products/<product_id>/modules/<module_id>/publications).",
    "validation_failed.not_after_start": "El vencimiento debe ser posterior al inicio y estar en el futuro.",
    "validation_failed.empty_range": "El final del intervalo debe ser posterior a su inicio.",
    "validation_failed.inconsistent_with_status": "El porcentaje no concuerda con el estado (completada es 100, no iniciada es 0).",
    "validation_failed.requires_completed": "completed_at solo se acepta con el estado completed.",
    "validation_failed.in_the_future": "El instante está en el futuro.",
    "validation_failed.self_reference": "Un módulo no puede esperar su propia finalización.",
    "state_conflict.not_enrolled": "El usuario no tiene una inscripción activa en el producto del examen.",
    "state_conflict.retake_not_allowed": "El examen permite un intento por usuario, y este usuario ya lo hizo.",
    "state_conflict.already_passed": "El examen solo permite un nuevo intento tras uno suspendido, y este usuario ya lo aprobó.",
    "state_conflict.retake_too_soon": "El examen exige una espera entre intentos: el siguiente es posible a partir de {available_at}.",
    "state_conflict.no_questions": "El examen no tiene preguntas que responder.",
    "state_conflict.exam_linked": "Hay lecciones vinculadas a este examen: desvincúlelo de ellas (su exam_id) primero.",
    "state_conflict.term_accepted": "Hay usuarios que aceptaron este término legal: permanece, como registro de lo que aceptaron.",
    "validation_failed.platform_term": "El término legal de la plataforma no pertenece a ningún producto: omita product_id.",
    "state_conflict.attempt_final": "Un intento de examen es definitivo: no se puede cambiar ni eliminar.",
    "invalid_value.no_correct_alternative": "Al menos una alternativa debe marcarse como correcta.",
    "invalid_value.single_choice": "Una pregunta de opción única admite como máximo una alternativa.",
    "invalid_value.questions_count": "El examen muestra {count} preguntas por intento: responda exactamente esa cantidad."
  },
  "fr-FR": {
    "validation_failed.not_found": "Aucun enregistrement n'existe avec cet ID, ou il est hors de la portée de l'identifiant.",
    "required.limited_credential": "Un identifiant limité à certains enregistrements doit nommer ici les produits qu'il atteint : un webhook ne livre que ce que son identifiant peut lire.",
    "template_not_previewable.no_template": "Le produit n'a pas encore de modèle de certificat : remplacez-le d'abord, puis prévisualisez-le.",
    "template_not_previewable.no_content": "Le modèle de certificat n'a ni texts.content ni fields : il n'y a rien à prévisualiser.",
    "invalid_value.unsupported_image_type": "L'image doit être un fichier PNG ou JPEG.",
    "invalid_value.malformed_event_type": "Un type d'événement s'écrit <ressource>.<verbe> en minuscules (user.created) ; un motif met * à la place d'une partie entière (user.*, *.deleted), et * seul désigne tous les types. Un joker partiel (us*.created) n'est pas accepté.",
    "already_exists.active_enrollment": "L'utilisateur a déjà une inscription active à ce produit.",
    "state_conflict.enrollment_not_active": "L'inscription n'est pas active (expirée, annulée ou après son échéance).",
    "state_conflict.enrollment_canceled": "L'inscription est annulée et ne peut plus changer.",
    "state_conflict.revoked": "L'accès de l'utilisateur par cette livraison a été retiré (un remboursement, une rétrofacturation ou une annulation).",
    "state_conflict.no_access": "L'utilisateur n'a pas d'accès actif par cette livraison (il a expiré, ou l'utilisateur a été supprimé).",
    "too_long.utf8_bytes": "La valeur est trop volumineuse (au maximum {max} octets en UTF-8 ; un caractère en occupe de 1 à 4).",
    "human_context_required.access_token_missing": "X-API-Key demande le mode humain, qui exige aussi Authorization: Bearer <jeton d'accès d'administrateur>. Pour appeler en tant qu'identifiant lui-même, envoyez son secret dans Authorization: Bearer, sans X-API-Key.",
    "human_context_required.credential_requires_human_mode": "Cet identifiant ne fonctionne qu'en mode humain : envoyez son secret dans X-API-Key et un jeton d'accès d'administrateur dans Authorization: Bearer.",
    "invalid_transition.use_cancellations": "Une inscription s'annule par son opération d'annulation, pas par un changement de statut.",
    "state_conflict.expires_at_passed": "L'échéance de l'inscription est passée : envoyez un nouvel expires_at pour la réactiver.",
    "state_conflict.lesson_not_published": "La leçon n'est pas publiée : une leçon est publiée avec son module (POST /products/<product_id>/modules/<module_id>/publications).",
    "validation_failed.not_after_start": "L'échéance doit être postérieure au début et dans le futur.",
    "validation_failed.empty_range": "La fin de l'intervalle doit être postérieure à son début.",
    "validation_failed.inconsistent_with_status": "Le pourcentage ne correspond pas au statut (terminée vaut 100, non commencée vaut 0).",
    "validation_failed.requires_completed": "completed_at n'est accepté qu'avec le statut completed.",
    "validation_failed.in_the_future": "L'instant est dans le futur.",
    "validation_failed.self_reference": "Un module ne peut pas attendre sa propre fin.",
    "state_conflict.not_enrolled": "L'utilisateur n'a pas d'inscription active au produit de l'examen.",
    "state_conflict.retake_not_allowed": "L'examen permet une tentative par utilisateur, et cet utilisateur l'a déjà faite.",
    "state_conflict.already_passed": "L'examen ne permet une nouvelle tentative qu'après un échec, et cet utilisateur l'a déjà réussi.",
    "state_conflict.retake_too_soon": "L'examen impose un délai entre les tentatives : la prochaine est possible à partir de {available_at}.",
    "state_conflict.no_questions": "L'examen n'a aucune question à laquelle répondre.",
    "state_conflict.exam_linked": "Des leçons sont liées à cet examen : retirez-le d'abord de leur exam_id.",
    "state_conflict.term_accepted": "Des utilisateurs ont accepté ces conditions : elles restent, comme trace de ce qu'ils ont accepté.",
    "validation_failed.platform_term": "Les conditions de la plateforme n'appartiennent à aucun produit : omettez product_id.",
    "state_conflict.attempt_final": "Une tentative d'examen est définitive : elle ne peut être ni modifiée ni supprimée.",
    "invalid_value.no_correct_alternative": "Au moins une alternative doit être marquée comme correcte.",
    "invalid_value.single_choice": "Une question à choix unique accepte au plus une alternative.",
    "invalid_value.questions_count": "L'examen montre {count} questions par tentative : répondez à exactement ce nombre."
  }
}

// ---------------------------------------------------------------------------------------------
// Rendering
// ---------------------------------------------------------------------------------------------

const placeholderPattern = /\{([A-Za-z_][A-Za-z0-9_]*)\}/g
/** A parenthesized group without nested parentheses, with the whitespace before it. */
const parentheticalPattern = /\s*\(([^()]*)\)/g

/** The placeholder names of a template, in order of appearance, without repeats. */
export const placeholdersOf = (template: string): ReadonlyArray<string> => {
  const names: Array<string> = []
  for (const match of template.matchAll(placeholderPattern)) {
    const name = match[1]
    if (name !== undefined && !names.includes(name)) names.push(name)
  }
  return names
}

/**
 * Substitutes `{name}` placeholders in a template. A placeholder without a value is dropped
 * cleanly: when it sits inside a parenthetical group, the whole group goes (so
 * "too long (at most {max} characters)." becomes "too long."); otherwise the token itself goes
 * and the spaces around it are collapsed. Values are inserted verbatim and never re-scanned.
 */
export const formatMessage = (
  template: string,
  params?: Readonly<Record<string, string | number>>
): string => {
  const valueOf = (name: string): string | undefined => {
    if (params === undefined || !Object.prototype.hasOwnProperty.call(params, name)) return undefined
    const value = params[name]
    if (typeof value === "number") return Number.isFinite(value) ? String(value) : undefined
    return typeof value === "string" ? value : undefined
  }
  const hasMissing = (text: string): boolean => placeholdersOf(text).some((name) => valueOf(name) === undefined)

  let missingRemoved = false
  const withoutGroups = template.replace(parentheticalPattern, (group: string, inner: string) => {
    if (!hasMissing(inner)) return group
    missingRemoved = true
    return ""
  })
  const substituted = withoutGroups.replace(placeholderPattern, (_token: string, name: string) => {
    const value = valueOf(name)
    if (value !== undefined) return value
    missingRemoved = true
    return ""
  })
  if (!missingRemoved) return substituted
  return substituted
    .replace(/[ \t]{2,}/g, " ")
    .replace(/[ \t]+([.,])/g, "$1")
    .trim()
}

/**
 * The message of a code in a language, with its placeholders filled from `params`; with a
 * `reason` that has a message of its own (`reasonMessages`), that one.
 */
export const renderMessage = (
  language: Language,
  code: DetailCode,
  params?: Readonly<Record<string, string | number>>,
  reason?: string
): string => {
  const byReason = reason === undefined ? undefined : (reasonMessages[language] ?? reasonMessages[defaultLanguage])[`${code}.${reason}`]
  const catalog = messages[language] ?? messages[defaultLanguage]
  const template = byReason ?? catalog[code] ?? messages[defaultLanguage][code] ?? code
  return formatMessage(template, params)
}
