/**
 * Validating values against the schemas of the served description with a third-party
 * validator: Ajv for JSON Schema 2020-12, as shipped with @seriousme/openapi-schema-validator.
 * The description is registered whole, so the `#/components/...` references inside it resolve.
 */
import { createRequire } from "node:module"

const fromValidator = createRequire(createRequire(import.meta.url).resolve("@seriousme/openapi-schema-validator"))
const Ajv2020 = fromValidator("ajv/dist/2020.js").default
const addFormats = fromValidator("ajv-formats").default

const DESCRIPTION_ID = "https://syllabus.test/openapi.json"

const escape = (segment: string) => segment.replaceAll("~", "~0").replaceAll("/", "~1")

/** A reference to a place of the registered description, by its path (`["components", "schemas", "Product"]`). */
export const at = (...path: ReadonlyArray<string>) => ({ $ref: `${DESCRIPTION_ID}#/${path.map(escape).join("/")}` })

export interface Validity {
  readonly valid: boolean
  readonly errors: ReadonlyArray<unknown>
}

/** `check(schema, value)`: whether `value` matches `schema`, which may refer to the description with `at(...)`. */
export const descriptionValidator = (doc: unknown) => {
  const ajv = new Ajv2020({ strict: false, allErrors: true, validateSchema: false })
  addFormats(ajv)
  ajv.addSchema({ ...(doc as object), $id: DESCRIPTION_ID })
  return (schema: object, value: unknown): Validity => {
    const validate = ajv.compile(schema)
    const valid = validate(value) as boolean
    return { valid, errors: valid ? [] : (validate.errors as ReadonlyArray<unknown>) }
  }
}
