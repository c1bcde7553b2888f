/**
 * The direction of imports between our packages and inside the core (docs/architecture.md),
 * checked by `pnpm lint:deps` (part of `pnpm test`).
 *
 *   core  ←  memory, pg, storage, http  ←  server, cli   (tests, examples, bench: anything)
 *
 * Paths are resolved ones: `@syllabus/core` resolves to `packages/core/src/index.ts`, a
 * `.js` specifier to its `.ts` source (NodeNext, through tsconfig.json), `effect` to the
 * pnpm store under `node_modules/.pnpm/`.
 */

/** A package, wherever it is installed (`node_modules/.pnpm/<id>/node_modules/<name>/…`). */
const npm = (name) => `(^|/)node_modules/${name}/`

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: "no-circular",
      severity: "error",
      comment:
        "No import cycle anywhere in our sources, type-only imports included: each package, and the core inside, is a tree " +
        "(a DAG). A cycle makes module evaluation order matter (a constant read while its module is still loading is undefined).",
      from: { path: "^packages/[^/]+/src/" },
      to: { circular: true }
    },
    {
      name: "not-to-unresolvable",
      severity: "error",
      comment: "Every import resolves; otherwise the rules below could not see where it goes.",
      from: { path: "^packages/[^/]+/src/" },
      to: { couldNotResolve: true }
    },

    // The core is pure: `effect` and itself.
    {
      name: "core-imports-nothing-of-ours",
      severity: "error",
      comment: "@syllabus/core is the centre: it imports no other package of ours; they import it.",
      from: { path: "^packages/core/src/" },
      to: { path: "^packages/", pathNot: "^packages/core/" }
    },
    {
      name: "core-imports-no-node-builtin",
      severity: "error",
      comment: "@syllabus/core runs anywhere Effect runs: no Node builtin (node:crypto, node:fs, …); the platform comes in through ports.",
      from: { path: "^packages/core/src/" },
      to: { dependencyTypes: ["core"] }
    },
    {
      name: "core-imports-no-platform-package",
      severity: "error",
      comment: "@syllabus/core speaks neither HTTP nor SQL: no @effect/platform*, no @effect/sql* (the adapters do).",
      from: { path: "^packages/core/src/" },
      to: { path: [npm("@effect/platform"), npm("@effect/platform-[a-z]+"), npm("@effect/sql"), npm("@effect/sql-[a-z]+")] }
    },
    {
      name: "core-imports-only-effect",
      severity: "error",
      comment: "@syllabus/core depends on `effect` alone (the platform packages and builtins have their own rules above).",
      from: { path: "^packages/core/src/" },
      to: {
        dependencyTypesNot: ["core"],
        pathNot: [
          "^packages/",
          npm("effect"),
          npm("@effect/platform"),
          npm("@effect/platform-[a-z]+"),
          npm("@effect/sql"),
          npm("@effect/sql-[a-z]+")
        ]
      }
    },

    // Adapters and assemblers.
    {
      name: "adapters-import-only-core",
      severity: "error",
      comment:
        "memory, pg, storage and http adapt the core to one thing each: they may import @syllabus/core, not one another " +
        "(nor an assembler). Putting adapters together is the job of server, cli, tests, examples and bench.",
      from: { path: "^packages/(memory|pg|storage|http)/src/" },
      to: { path: "^packages/", pathNot: "^packages/(core|$1)/" }
    },
    {
      name: "no-package-imports-an-assembler",
      severity: "error",
      comment: "server, cli (and testing, when it exists) assemble the others: no package imports them.",
      from: { path: "^packages/([^/]+)/src/" },
      to: { path: "^packages/(server|cli|testing)/", pathNot: "^packages/$1/" }
    },
    {
      name: "packages-import-each-other-by-name",
      severity: "error",
      comment:
        "Another package is imported by its name (`@syllabus/core`), which resolves to its src/index.ts, never by a path into its " +
        "sources: what a package exports is what its index exports.",
      from: { path: "^packages/([^/]+)/src/" },
      to: { path: "^packages/", pathNot: ["^packages/$1/", "^packages/[^/]+/src/index\\.ts$"] }
    },

    // Inside the core.
    {
      name: "core-registry-on-top",
      severity: "error",
      comment:
        "registry/ knows every described resource and derives from the list the capability catalog, event types and batches. " +
        "Only core's top-level files (index.ts) import it: an access rule or a resource that needs the catalog gets it as the " +
        "CapabilityCatalog service, so the resources never depend on the list they are part of.",
      from: { path: "^packages/core/src/[^/]+/", pathNot: "^packages/core/src/registry/" },
      to: { path: "^packages/core/src/registry/" }
    },
    {
      name: "core-foundations-at-the-bottom",
      severity: "error",
      comment: "errors/ (the error catalog) and ports/ (what adapters implement) import nothing else of the core.",
      from: { path: "^packages/core/src/(errors|ports)/" },
      to: { path: "^packages/core/src/", pathNot: "^packages/core/src/$1/" }
    }
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    // `import type` counts: a cycle of types is still a knot for the reader, and the rules are about design.
    tsPreCompilationDeps: true,
    // NodeNext: `./x.js` in a source means `./x.ts`; tsconfig.json tells dependency-cruiser so.
    tsConfig: { fileName: "tsconfig.json" },
    // Workspace packages resolve through their package.json `exports` (`./src/index.ts`).
    enhancedResolveOptions: {
      exportsFields: ["exports"],
      conditionNames: ["import", "require", "node", "default", "types"],
      mainFields: ["module", "main", "types", "typings"]
    }
  }
}
