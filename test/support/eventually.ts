/** Retry an assertion until it holds or `timeoutMs` passes (workers poll every few hundred ms). */
export const eventually = async <A>(check: () => Promise<A>, timeoutMs = 15_000): Promise<A> => {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    try {
      return await check()
    } catch (error) {
      if (Date.now() > deadline) throw error
      await new Promise((r) => setTimeout(r, 100))
    }
  }
}
