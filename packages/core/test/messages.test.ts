import { describe, it, expect } from "vitest"
import { detailOnlyCodes, errorStatus, type DetailCode } from "@syllabus/core"
import {
  formatMessage,
  languages,
  messages,
  negotiateLanguage,
  placeholdersOf,
  reasonMessages,
  renderMessage,
  type MessageCatalog
} from "@syllabus/core"

const allCodes: ReadonlyArray<DetailCode> = [
  ...(Object.keys(errorStatus) as ReadonlyArray<keyof typeof errorStatus>),
  ...detailOnlyCodes
]

describe("negotiateLanguage", () => {
  it.each<[string | undefined, string]>([
    [undefined, "en-US"],
    ["", "en-US"],
    ["   ", "en-US"],
    ["pt-BR", "pt-BR"],
    ["PT-br", "pt-BR"],
    ["pt", "pt-BR"],
    ["pt-PT", "pt-BR"],
    ["pt_BR", "pt-BR"],
    ["fr-CA,fr;q=0.9", "fr-FR"],
    ["fr-CA", "fr-FR"],
    ["de, es;q=0.5", "es-ES"],
    ["es-MX", "es-ES"],
    ["en-GB", "en-US"],
    ["*", "en-US"],
    ["en;q=0, pt;q=0.1", "pt-BR"],
    ["en;q=0, *", "pt-BR"],
    ["en-US;q=0, *;q=0.5, fr;q=0.4", "pt-BR"],
    ["fr;q=0.5, *", "en-US"],
    ["de, *;q=0.1, es;q=0.2", "es-ES"],
    ["es, fr", "es-ES"],
    ["fr;q=0.8, es;q=0.9", "es-ES"],
    ["fr ; q = 0.8 , es ; q=0.7", "fr-FR"],
    ["es;q=1.0, pt-BR;q=1", "es-ES"],
    ["pt;q=0, pt-BR", "pt-BR"],
    ["pt-BR;q=0, pt", "en-US"],
    ["de, ja", "en-US"],
    ["en;q=0, pt;q=0, es;q=0, fr;q=0", "en-US"],
    [";;;q=abc", "en-US"],
    ["pt;q=abc, es", "es-ES"],
    ["pt;q=2, fr", "fr-FR"],
    ["pt;q=-1", "en-US"],
    ["!!!, ???", "en-US"],
    [",,,", "en-US"],
    ["q=0.5", "en-US"],
    ["x".repeat(100_000), "en-US"]
  ])("%j -> %s", (header, expected) => {
    expect(negotiateLanguage(header)).toBe(expected)
  })

  it("never throws on hostile input", () => {
    const inputs = ["\u0000", "pt;q=", "pt;;;;", ";q=1", "*;q=0", "(", "{}", "pt-".repeat(5000), "\uD800"]
    for (const input of inputs) {
      expect(() => negotiateLanguage(input)).not.toThrow()
      expect(languages).toContain(negotiateLanguage(input))
    }
  })
})

describe("messages", () => {
  it("makes a missing code a compile error", () => {
    // @ts-expect-error: a catalog must name every code
    const incomplete: MessageCatalog = { not_found: "Not found." }
    expect(Object.keys(incomplete)).toHaveLength(1)
  })

  it("covers every language", () => {
    expect(Object.keys(messages).sort()).toEqual([...languages].sort())
  })

  it("has a non-empty message for every code in every language", () => {
    for (const language of languages) {
      const catalog = messages[language]
      for (const code of allCodes) {
        const message = catalog[code]
        expect(typeof message, `${language} ${code}`).toBe("string")
        expect(message.trim().length, `${language} ${code}`).toBeGreaterThan(0)
      }
      expect(Object.keys(catalog).sort()).toEqual([...allCodes].sort())
    }
  })

  it("translates every message away from English", () => {
    for (const language of languages) {
      if (language === "en-US") continue
      const same = allCodes.filter((code) => messages[language][code] === messages["en-US"][code])
      expect(same, language).toEqual([])
    }
  })

  it("uses the same placeholders for one code in every language", () => {
    for (const code of allCodes) {
      const expected = [...placeholdersOf(messages["en-US"][code])].sort()
      for (const language of languages) {
        expect([...placeholdersOf(messages[language][code])].sort(), `${language} ${code}`).toEqual(expected)
      }
    }
  })

  it("has balanced braces and parentheses in every message", () => {
    for (const language of languages) {
      for (const code of allCodes) {
        const message = messages[language][code]
        const withoutPlaceholders = message.replace(/\{[A-Za-z_][A-Za-z0-9_]*\}/g, "")
        expect(withoutPlaceholders, `${language} ${code}`).not.toMatch(/[{}]/)
        expect(message.split("(").length, `${language} ${code}`).toBe(message.split(")").length)
      }
    }
  })

  it("reads cleanly without any params in every language", () => {
    for (const language of languages) {
      for (const code of allCodes) {
        const rendered = renderMessage(language, code)
        expect(rendered, `${language} ${code}`).not.toMatch(/[{}]|\(\s*\)|\s{2,}|\s[.,]/)
        expect(rendered.trim(), `${language} ${code}`).toBe(rendered)
        expect(rendered.length, `${language} ${code}`).toBeGreaterThan(0)
      }
    }
  })
})

describe("renderMessage", () => {
  it("substitutes placeholders", () => {
    expect(renderMessage("en-US", "too_long", { max: 64 })).toBe("The value is too long (at most 64 characters).")
    expect(renderMessage("pt-BR", "too_long", { max: 64 })).toBe("O valor é longo demais (no máximo 64 caracteres).")
    expect(renderMessage("en-US", "out_of_range", { min: 1, max: 200 })).toBe(
      "The value is out of the allowed range (between 1 and 200)."
    )
    expect(renderMessage("fr-FR", "method_not_allowed", { allowed: "GET, POST" })).toBe(
      "Cette méthode HTTP n'est pas autorisée sur cette route (méthodes autorisées : GET, POST)."
    )
    expect(renderMessage("es-ES", "rate_limit_exceeded", { retry_after_seconds: 12 })).toBe(
      "Se ha superado el límite de solicitudes (vuelva a intentarlo dentro de 12 segundos)."
    )
  })

  it("returns messages without placeholders unchanged", () => {
    expect(renderMessage("en-US", "not_found")).toBe("The requested resource was not found.")
    expect(renderMessage("en-US", "not_found", { max: 3 })).toBe("The requested resource was not found.")
    expect(renderMessage("pt-BR", "not_found")).toBe("O recurso solicitado não foi encontrado.")
  })

  it("drops a parenthetical group whose placeholder has no value", () => {
    expect(renderMessage("en-US", "too_long")).toBe("The value is too long.")
    expect(renderMessage("en-US", "too_long", {})).toBe("The value is too long.")
    expect(renderMessage("en-US", "out_of_range", { max: 10 })).toBe("The value is out of the allowed range.")
    expect(renderMessage("fr-FR", "rate_limit_exceeded")).toBe("La limite de requêtes a été dépassée.")
    expect(renderMessage("en-US", "method_not_allowed")).toBe("This HTTP method is not allowed on this route.")
  })

  it("removes a bare missing token and collapses double spaces", () => {
    expect(formatMessage("Use {method} on this route.", {})).toBe("Use on this route.")
    expect(formatMessage("Retry after {seconds}.")).toBe("Retry after.")
    expect(formatMessage("{scope} limit reached", { other: 1 })).toBe("limit reached")
    expect(formatMessage("Limit {limit} for {scope} reached.", { limit: 5 })).toBe("Limit 5 for reached.")
  })

  it("does not read placeholders from the prototype or from substituted values", () => {
    expect(formatMessage("A {constructor} B.", {})).toBe("A B.")
    expect(formatMessage("Allowed: {allowed}.", { allowed: "{max}" })).toBe("Allowed: {max}.")
  })

  it("keeps text untouched when every placeholder has a value", () => {
    expect(formatMessage("A  {x}  B", { x: "y" })).toBe("A  y  B")
  })
})

describe("reason messages", () => {
  it("name the same reasons in every language, each translated, each a known code's", () => {
    const keys = Object.keys(reasonMessages["en-US"]).sort()
    expect(keys.length).toBeGreaterThan(0)
    for (const language of languages) {
      expect(Object.keys(reasonMessages[language]).sort(), language).toEqual(keys)
      if (language !== "en-US") {
        for (const key of keys) expect(reasonMessages[language][key], `${language} ${key}`).not.toBe(reasonMessages["en-US"][key])
      }
    }
    for (const key of keys) expect(allCodes).toContain(key.split(".")[0])
  })

  it("win over the code's own message when the reason has one, and only then", () => {
    expect(renderMessage("en-US", "validation_failed", {}, "not_found")).toMatch(/no record with this ID exists/i)
    expect(renderMessage("en-US", "validation_failed", {}, "other")).toBe(messages["en-US"].validation_failed)
  })
})
