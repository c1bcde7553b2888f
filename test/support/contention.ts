/**
 * Units of work that meet on one showcase's order (`contends` in core's ports), for the stores'
 * contention tests: the end of the order read, a product placed after it.
 */
import { contends, Records, type Tenant, UnitOfWork } from "@syllabus/core"
import { type Context, Deferred, Effect } from "effect"

export const showcaseOrder = (context: Context.Context<Records | UnitOfWork>, tenant: Tenant, showcase: string) => {
  const key = `showcase/${showcase}`
  const lastPosition = Effect.gen(function*() {
    const [last] = yield* (yield* Records).list(tenant, "product", {
      where: [{ field: "showcase_id", op: "eq", value: showcase }],
      sort: { field: "position", kind: "number", direction: "desc" },
      limit: 1
    })
    return last === undefined ? 0 : Number(last.data.position)
  })
  const place = (id: string, position: number) =>
    Effect.flatMap(Records, (records) => records.insert(tenant, "product", id, { showcase_id: showcase, position }))
  /** Appends `id` at the end of the order in a unit of work of its own that says it contends on the key. */
  const append = (id: string) =>
    Effect.flatMap(UnitOfWork, (uow) =>
      uow.transaction(Effect.gen(function*() {
        yield* contends(tenant, key)
        yield* place(id, (yield* lastPosition) + 1)
      }))).pipe(Effect.provide(context))
  /**
   * A and B read the end of the order, B places and commits, then A places: A loses the race and
   * runs again (queued on the key). Answers how many times A ran.
   */
  const loseARace = (a: string, b: string) =>
    Effect.gen(function*() {
      const bRead = yield* Deferred.make<void>()
      const bDone = yield* Deferred.make<void>()
      let aRuns = 0
      const first = Effect.flatMap(UnitOfWork, (uow) =>
        uow.transaction(Effect.gen(function*() {
          aRuns++
          yield* contends(tenant, key)
          const end = yield* lastPosition
          if (aRuns === 1) {
            yield* Deferred.succeed(bRead, undefined)
            yield* Deferred.await(bDone)
          }
          yield* place(a, end + 1)
        }))).pipe(Effect.provide(context))
      const second = Deferred.await(bRead).pipe(Effect.zipRight(append(b)), Effect.zipRight(Deferred.succeed(bDone, undefined)))
      yield* Effect.all([first, second], { concurrency: "unbounded" })
      return aRuns
    })
  return { key, lastPosition, place, append, loseARace }
}
