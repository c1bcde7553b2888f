/**
 * Plans of the PostgreSQL store's statements, for the tests that require a read to go through
 * its access path's index (`EXPLAIN (FORMAT JSON)` of the very statement the store runs).
 */
import * as SqlClient from "@effect/sql/SqlClient"
import type { Statement } from "@effect/sql/Statement"
import type { AccessPath } from "@syllabus/core"
import { Effect } from "effect"
import { accessPathIndexes } from "../../packages/pg/src/index.js"

export interface PlanNode {
  readonly "Node Type": string
  readonly "Relation Name"?: string
  readonly "Index Name"?: string
  readonly "Index Cond"?: string
  readonly Filter?: string
  readonly Plans?: ReadonlyArray<PlanNode>
}

/** A node and every node below it. */
export const nodesOf = (node: PlanNode): ReadonlyArray<PlanNode> => [node, ...(node.Plans ?? []).flatMap(nodesOf)]

/** The plan of `statement`: its sequential scans of `records`, the indexes it reads, its nodes and its JSON. */
export const planOf = (statement: Statement<unknown>) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql<{ readonly "QUERY PLAN": ReadonlyArray<{ readonly Plan: PlanNode }> }>`EXPLAIN (FORMAT JSON) ${statement}`
    const plan = rows[0]!["QUERY PLAN"][0]!.Plan
    const nodes = nodesOf(plan)
    return {
      seqScans: nodes.filter((n) => n["Node Type"] === "Seq Scan" && n["Relation Name"] === "records").length,
      indexes: nodes.flatMap((n) => (n["Index Name"] === undefined ? [] : [n["Index Name"]])),
      nodes,
      text: JSON.stringify(plan)
    }
  })

/** The name of the index the store keeps for an access path. */
export const indexOf = (path: AccessPath): string => accessPathIndexes([path])[0]!.name
