/**
 * What a run of the CLI is given from outside: the environment variables and the terminal
 * (output streams and a way to open a browser). `main.ts` passes the real ones; tests pass
 * their own, so a test runs the very program a user runs.
 *
 * On the start path (`syllabus --help` loads it): Effect's modules are imported one by one,
 * not from the `effect` barrel, which would load every module of the library.
 */
import * as Console from "effect/Console"
import * as Context from "effect/Context"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import { spawn } from "node:child_process"
import { Console as NodeConsole } from "node:console"
import { Writable } from "node:stream"

export interface Io {
  /** Standard output: results (tables, JSON). */
  readonly out: (text: string) => void
  /** Standard error: messages for the person (instructions, progress, errors). */
  readonly err: (text: string) => void
  /** Try to open `url` in the user's browser; failing is fine (the URL is printed too). */
  readonly openBrowser: (url: string) => void
  /** Standard error is a terminal (a person watches it): progress may redraw one line, help may be coloured. Default: no. */
  readonly stderrIsTerminal?: boolean
  /** Standard output is a terminal: help may be coloured. Default: no (a pipe, a file). */
  readonly stdoutIsTerminal?: boolean
}

export type Env = Readonly<Record<string, string | undefined>>

export class CliContext extends Context.Tag("@syllabus/cli/CliContext")<
  CliContext,
  { readonly env: Env; readonly io: Io }
>() {}

/** A failure the user sees as `code: message`, and the process exits non-zero. */
export class CliError extends Data.TaggedError("CliError")<{ readonly code: string; readonly message: string }> {}

export const out = (text: string) => Effect.flatMap(CliContext, ({ io }) => Effect.sync(() => io.out(text)))
export const err = (text: string) => Effect.flatMap(CliContext, ({ io }) => Effect.sync(() => io.err(text)))

// ---------------------------------------------------------------------------------------
// Colour

/** ANSI escape sequences (SGR colours and styles, cursor moves). */
const ANSI = /\u001b\[[0-9;?]*[A-Za-z]/g

export const stripAnsi = (text: string) => text.replace(ANSI, "")

/** Colour only on a terminal, and not when `NO_COLOR` is set to anything (https://no-color.org). */
const colourAllowed = (terminal: boolean | undefined, env: Env) => terminal === true && (env.NO_COLOR ?? "") === ""

/**
 * The console of a run: what @effect/cli prints (help, usage errors, with ANSI styles) goes
 * to `io.out` and `io.err`, its escape codes removed where colour is not allowed.
 */
export const runConsole = (io: Io, env: Env): Console.Console => {
  const sink = (write: (text: string) => void, colour: boolean) =>
    new Writable({
      decodeStrings: false,
      write: (chunk: string | Buffer, _encoding, done) => {
        const text = typeof chunk === "string" ? chunk : chunk.toString("utf8")
        write(colour ? text : stripAnsi(text))
        done()
      }
    })
  const unsafe = new NodeConsole({
    stdout: sink(io.out, colourAllowed(io.stdoutIsTerminal, env)),
    stderr: sink(io.err, colourAllowed(io.stderrIsTerminal, env)),
    colorMode: false
  })
  return {
    [Console.TypeId]: Console.TypeId,
    assert: (condition, ...args) => Effect.sync(() => unsafe.assert(condition, ...args)),
    clear: Effect.sync(() => unsafe.clear()),
    count: (label) => Effect.sync(() => unsafe.count(label)),
    countReset: (label) => Effect.sync(() => unsafe.countReset(label)),
    debug: (...args) => Effect.sync(() => unsafe.debug(...args)),
    dir: (item, options) => Effect.sync(() => unsafe.dir(item, options)),
    dirxml: (...args) => Effect.sync(() => unsafe.dirxml(...args)),
    error: (...args) => Effect.sync(() => unsafe.error(...args)),
    group: (options) => Effect.sync(() => (options?.collapsed ? unsafe.groupCollapsed(options.label) : unsafe.group(options?.label))),
    groupEnd: Effect.sync(() => unsafe.groupEnd()),
    info: (...args) => Effect.sync(() => unsafe.info(...args)),
    log: (...args) => Effect.sync(() => unsafe.log(...args)),
    table: (data, properties) => Effect.sync(() => unsafe.table(data, properties)),
    time: (label) => Effect.sync(() => unsafe.time(label)),
    timeEnd: (label) => Effect.sync(() => unsafe.timeEnd(label)),
    timeLog: (label, ...args) => Effect.sync(() => unsafe.timeLog(label, ...args)),
    trace: (...args) => Effect.sync(() => unsafe.trace(...args)),
    warn: (...args) => Effect.sync(() => unsafe.warn(...args)),
    unsafe
  }
}

// ---------------------------------------------------------------------------------------
// The process's own terminal

const browserCommand = (url: string): [string, Array<string>] =>
  process.platform === "darwin"
    ? ["open", [url]]
    : process.platform === "win32"
      ? ["cmd", ["/c", "start", "", url]]
      : ["xdg-open", [url]]

export const processIo: Io = {
  stderrIsTerminal: process.stderr.isTTY === true,
  stdoutIsTerminal: process.stdout.isTTY === true,
  out: (text) => process.stdout.write(text),
  err: (text) => process.stderr.write(text),
  openBrowser: (url) => {
    const [command, args] = browserCommand(url)
    try {
      const child = spawn(command, args, { stdio: "ignore", detached: true })
      child.on("error", () => undefined)
      child.unref()
    } catch {
      // No browser here: the printed URL is enough.
    }
  }
}
