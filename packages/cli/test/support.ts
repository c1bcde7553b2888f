/**
 * Running the CLI inside a test: its own config directory, output captured, and a
 * browser (fetch with cookies) that goes through the sign-in pages as a person would.
 */
import { FormBrowser } from "../../../test/support/browser.js"
import { acceptedTotpCodes } from "@syllabus/core"
import { Clock, Effect, Exit, Fiber } from "effect"
import { createHmac } from "node:crypto"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { expect } from "vitest"
import type { Harness } from "../../../test/support/harness.js"
import { type Env, run } from "../src/index.js"

export const PASSWORD = "correct horse battery"

export interface CliRun {
  /** Resolves with the exit code when the command ends. */
  readonly exit: Promise<number>
  readonly stdout: () => string
  readonly stderr: () => string
  /** Wait until stderr matches `pattern`; answer the match. */
  readonly waitForStderr: (pattern: RegExp) => Promise<RegExpExecArray>
  /** Wait until stdout matches `pattern`; answer the match. */
  readonly waitForStdout: (pattern: RegExp) => Promise<RegExpExecArray>
  /** Interrupt the command, as Ctrl-C does; resolves with its exit code once it has cleaned up. */
  readonly stop: () => Promise<number>
}

export interface UserOptions {
  readonly env?: Env
  /** Where `login` without `--no-browser` sends the authorize URL. */
  readonly openBrowser?: (url: string) => void
  /** Whether stderr is a terminal (default: no, as in CI). */
  readonly stderrIsTerminal?: boolean
  /** Whether stdout is a terminal (default: no, as in CI). */
  readonly stdoutIsTerminal?: boolean
}

/** The CLI's own clock, `offsetMs` ahead of the real one (the machine's time moved on). */
const clockAhead = (offsetMs: number): Clock.Clock => {
  const live = Clock.make()
  return {
    [Clock.ClockTypeId]: Clock.ClockTypeId,
    unsafeCurrentTimeMillis: () => live.unsafeCurrentTimeMillis() + offsetMs,
    unsafeCurrentTimeNanos: () => live.unsafeCurrentTimeNanos() + BigInt(offsetMs) * 1_000_000n,
    currentTimeMillis: Effect.sync(() => live.unsafeCurrentTimeMillis() + offsetMs),
    currentTimeNanos: Effect.sync(() => live.unsafeCurrentTimeNanos() + BigInt(offsetMs) * 1_000_000n),
    sleep: (duration) => live.sleep(duration)
  }
}

/** A user of the CLI: one config directory (or the env given). */
export const user = (options: UserOptions = {}) => {
  const env = options.env ?? { SYLLABUS_CONFIG_DIR: join(mkdtempSync(join(tmpdir(), "syllabus-cli-")), "config") }
  let clockOffsetMs = 0
  const start = (...argv: ReadonlyArray<string>): CliRun => {
    let stdout = ""
    let stderr = ""
    const fiber = Effect.runFork(
      run(argv, env, {
        out: (text) => void (stdout += text),
        err: (text) => void (stderr += text),
        stderrIsTerminal: options.stderrIsTerminal ?? false,
        stdoutIsTerminal: options.stdoutIsTerminal ?? false,
        openBrowser:
          options.openBrowser ??
          (() => {
            throw new Error("tests pass --no-browser")
          })
      }).pipe(Effect.withClock(clockAhead(clockOffsetMs)))
    )
    // Interrupted from outside (`stop`), the program answers no code: 130, as a shell shows Ctrl-C.
    const exit = Effect.runPromise(Fiber.await(fiber)).then((result) =>
      Exit.isSuccess(result) ? result.value : Exit.isInterrupted(result) ? 130 : Promise.reject(new Error(String(result.cause)))
    )
    const waitFor = (name: string, read: () => string) => async (pattern: RegExp) => {
      for (let i = 0; i < 400; i++) {
        const match = pattern.exec(read())
        if (match) return match
        await new Promise((resolve) => setTimeout(resolve, 25))
      }
      throw new Error(`${name} never matched ${pattern}: ${read()}\nstderr: ${stderr}`)
    }
    const stop = async () => {
      await Effect.runPromise(Fiber.interrupt(fiber))
      return exit
    }
    return {
      exit,
      stdout: () => stdout,
      stderr: () => stderr,
      waitForStderr: waitFor("stderr", () => stderr),
      waitForStdout: waitFor("stdout", () => stdout),
      stop
    }
  }
  /** Run a command to its end. */
  const cli = async (...argv: ReadonlyArray<string>) => {
    const running = start(...argv)
    const code = await running.exit
    return { code, stdout: running.stdout(), stderr: running.stderr() }
  }
  /** Move this user's clock forward (the CLI's own notion of time). */
  const advance = (ms: number) => {
    clockOffsetMs += ms
  }
  return { env, dir: env.SYLLABUS_CONFIG_DIR!, start, cli, advance }
}

// ---------------------------------------------------------------------------------------
// The browser side of the sign-in

const hmacSha1 = (key: Uint8Array, message: Uint8Array) => new Uint8Array(createHmac("sha1", key).update(message).digest())

export const totpCode = (secret: string, clockOffsetMs: number) => acceptedTotpCodes(hmacSha1, secret, Date.now() + clockOffsetMs)[1]!

/** Turn two-factor authentication on for an administrator, through the API. */
export const enrollTotp = async (h: Harness, secret: string, administratorId: string) => {
  const started = await h.request("POST", `/api/v3/administrators/${administratorId}/two-factor-enrollments`, { secret })
  expect(started.status).toBe(201)
  const totp = String(started.body.data.secret)
  const confirmed = await h.request("POST", `/api/v3/administrators/${administratorId}/two-factor-enrollments/confirmations`, {
    secret,
    json: { code: totpCode(totp, 0) }
  })
  expect(confirmed.status, confirmed.text).toBeLessThan(300)
  return totp
}


const field = (html: string, name: string) => new RegExp(`name="${name}" value="([^"]*)"`).exec(html)?.[1]

export interface SignIn {
  readonly email: string
  readonly totpSecret: string
  readonly clockOffsetMs: number
  readonly decision?: "approve" | "deny"
}

/**
 * From the authorize URL the CLI printed to the redirect back to it: platform confirmation,
 * password, TOTP, consent. Answers the redirect (not yet followed).
 */
export const signIn = async (h: Harness, authorizeUrl: string, person: SignIn): Promise<URL> => {
  const browser = new FormBrowser(h.baseUrl)
  const url = new URL(authorizeUrl)
  let page = await browser.go("GET", authorizeUrl)
  if (page.html.includes('action="/oauth/authorize/confirm"')) {
    const params = Object.fromEntries(url.searchParams)
    const confirm = await browser.go("POST", "/oauth/authorize/confirm", { ...params, platform: field(page.html, "platform")! })
    page = await browser.go("GET", confirm.location!)
  }
  const flow = field(page.html, "flow")
  if (!flow) throw new Error(`no sign-in page: ${page.status} ${page.html.slice(0, 300)}`)
  const signedIn = await browser.go("POST", "/oauth/sign-in", { flow, email: person.email, password: PASSWORD })
  expect(signedIn.status, signedIn.html.slice(0, 300)).toBe(200)
  const consent = await browser.go("POST", "/oauth/two-factor", { flow, code: totpCode(person.totpSecret, person.clockOffsetMs) })
  expect(consent.status, consent.html.slice(0, 300)).toBe(200)
  const back = await browser.go("POST", "/oauth/consent", { flow, decision: person.decision ?? "approve" })
  expect(back.location).toBeTruthy()
  return new URL(back.location!)
}
