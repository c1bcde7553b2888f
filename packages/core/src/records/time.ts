/**
 * Timestamps (§2.1): RFC 3339; responses in UTC with `Z` and milliseconds; requests accept
 * any offset.
 */
import { Clock, Effect, Option } from "effect"

const rfc3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/

/** The wire form: `2026-11-22T10:00:00.000Z`. */
export const formatTimestamp = (epochMs: number): string => new Date(epochMs).toISOString()

/** The current time in the wire form, on the server's clock. */
export const currentTimestamp: Effect.Effect<string> = Effect.map(Clock.currentTimeMillis, formatTimestamp)

/** Parse an RFC 3339 date-time with any offset into epoch milliseconds. */
export const parseTimestamp = (text: string): Option.Option<number> => {
  const m = rfc3339.exec(text)
  if (!m) return Option.none()
  const [, year, month, day, hour, minute, second] = m
  // The days of that month (Date.parse would roll 30 February over to 1 March).
  const daysInMonth = new Date(Date.UTC(Number(year), Number(month), 0)).getUTCDate()
  if (Number(month) < 1 || Number(month) > 12 || Number(day) < 1 || Number(day) > daysInMonth) return Option.none()
  if (Number(hour) > 23 || Number(minute) > 59 || Number(second) > 60) return Option.none()
  const ms = Date.parse(text.toUpperCase())
  return Number.isNaN(ms) ? Option.none() : Option.some(ms)
}

export const SECOND = 1000
export const MINUTE = 60 * SECOND
export const HOUR = 60 * MINUTE
export const DAY = 24 * HOUR
