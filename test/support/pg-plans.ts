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

/** `records`, or one of its partitions (`records_t_<type>`, `records_default`). */
const isRecordsRelation = (name: string | undefined): boolean => name === "records" || (name?.startsWith("records_") ?? false)

/**
 * The index of a partition of `records` that `index` is part of: `index` itself, or, for the
 * index of a stream's week (a partition of a partition, streams.ts), the partitioned index it
 * is attached to (its access path's, or the partition's key).
 */
const accessPathIndexNamed = (index: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql<{ readonly name: string }>`
      WITH RECURSIVE up(oid, name, table_oid, depth) AS (
        SELECT c.oid, c.relname, x.indrelid, 0 FROM pg_class c JOIN pg_index x ON x.indexrelid = c.oid WHERE c.relname = ${index}
        UNION ALL
        SELECT p.oid, p.relname, px.indrelid, up.depth + 1
        FROM up JOIN pg_inherits i ON i.inhrelid = up.oid JOIN pg_class p ON p.oid = i.inhparent JOIN pg_index px ON px.indexrelid = p.oid
        WHERE up.table_oid NOT IN (SELECT inhrelid FROM pg_inherits WHERE inhparent = 'records'::regclass)
      )
      SELECT name FROM up ORDER BY depth DESC LIMIT 1`
    return rows[0]?.name ?? index
  })

/** A node and every node below it. */
export const nodesOf = (node: PlanNode): ReadonlyArray<PlanNode> => [node, ...(node.Plans ?? []).flatMap(nodesOf)]

/** The plan of `statement`: its sequential scans of `records` (of any of its partitions), the indexes it reads, its nodes and its JSON. */
export const planOf = (statement: Statement<unknown>, options: { readonly seqScans?: "priced" | "last resort" } = {}) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const explain = sql<{ readonly "QUERY PLAN": ReadonlyArray<{ readonly Plan: PlanNode }> }>`EXPLAIN (FORMAT JSON) ${statement}`
    // "last resort": whether an index can serve the statement at all, whatever the size of the
    // table: a partition of a few thousand rows is cheaper to read whole, and the planner says
    // so, where a school's table of millions is not (`enable_seqscan = off` keeps a sequential
    // scan only where no index applies).
    const rows = options.seqScans === "last resort"
      ? yield* sql.withTransaction(Effect.zipRight(sql`SET LOCAL enable_seqscan = off`, explain))
      : yield* explain
    const plan = rows[0]!["QUERY PLAN"][0]!.Plan
    const nodes = nodesOf(plan)
    const indexes = yield* Effect.forEach(nodes.flatMap((n) => (n["Index Name"] === undefined ? [] : [n["Index Name"]])), accessPathIndexNamed)
    return {
      seqScans: nodes.filter((n) => n["Node Type"] === "Seq Scan" && isRecordsRelation(n["Relation Name"])).length,
      indexes,
      nodes,
      text: JSON.stringify(plan)
    }
  })

/** The name of the index the store keeps for an access path. */
export const indexOf = (path: AccessPath): string => accessPathIndexes([path])[0]!.name
