/**
 * Resources of the "people" group (3.1.0): users, tags, custom fields and administrators.
 *
 * Only custom fields are served by the derived routes as they are. Users and tags need a
 * view that depends on the caller or on other records (personal data shown only with
 * `users.read_personal`; a tag's live `users_count`), and administrators live at the account
 * level rather than in the caller's environment: `@syllabus/http` serves those three from
 * their descriptions with its own operations (routes/people.ts).
 */
import type { OperationKind } from "../operations/operations.js"
import type { ResourceDefinition } from "../records/resource.js"
import { customFields as customFieldsBase } from "./people-custom-fields.js"
import { removeCustomFieldValues } from "./people-users.js"

export * from "./people-administrators.js"
export * from "./people-users.js"

/** Custom fields; removing one removes its values from every user. */
export const customFields: ResourceDefinition = {
  ...customFieldsBase,
  rules: { ...customFieldsBase.rules, afterDelete: removeCustomFieldValues }
}

export const peopleResources: ReadonlyArray<ResourceDefinition> = [customFields]

export const peopleOperationKinds: Readonly<Record<string, OperationKind>> = {}
