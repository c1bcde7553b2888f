/** A scripted browser for the sign-in pages: cookies kept per name, redirects not followed. */
export class FormBrowser {
  readonly cookies = new Map<string, string>()
  constructor(readonly baseUrl: string) {}
  async go(method: "GET" | "POST", path: string, form?: Record<string, string>) {
    const headers: Record<string, string> = {}
    if (this.cookies.size > 0) headers["cookie"] = [...this.cookies].map(([k, v]) => `${k}=${v}`).join("; ")
    if (form) headers["content-type"] = "application/x-www-form-urlencoded"
    const res = await fetch(path.startsWith("http") ? path : this.baseUrl + path, {
      method,
      headers,
      redirect: "manual",
      ...(form ? { body: new URLSearchParams(form).toString() } : {})
    })
    for (const line of res.headers.getSetCookie()) {
      const [pair] = line.split(";")
      const at = pair!.indexOf("=")
      this.cookies.set(pair!.slice(0, at), pair!.slice(at + 1))
    }
    return { status: res.status, location: res.headers.get("location"), html: await res.text(), headers: res.headers }
  }
}
