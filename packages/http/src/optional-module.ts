/**
 * Dependencies that only some features need (reading XLSX imports, drawing certificates,
 * sending mail over SMTP) are optional peers of @syllabus/http: the standalone server installs
 * them, a user of the in-process double (`@syllabus/testing`) does not have to. They are loaded
 * when a feature first needs them, with an error that says what to install.
 */
import { createRequire } from "node:module"

const require = createRequire(import.meta.url)

/** Whether a package can be loaded from here. */
export const isInstalled = (name: string): boolean => {
  try {
    require.resolve(name)
    return true
  } catch {
    return false
  }
}

/** What to tell whoever uses a feature whose packages are not installed. */
export const notInstalled = (feature: string, names: ReadonlyArray<string>): string =>
  `${feature} needs ${names.join(", ")}, optional dependencies of @syllabus/http: npm install ${names.join(" ")}`

/** Import an optional dependency, or fail saying what to install. */
export const importOptional = async <M>(name: string, feature: string): Promise<M> => {
  if (!isInstalled(name)) throw new Error(notInstalled(feature, [name]))
  return (await import(name)) as M
}
