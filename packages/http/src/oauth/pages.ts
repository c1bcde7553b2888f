/**
 * The pages a person sees while authorizing the command-line client (§5.2): plain
 * server-rendered HTML forms that work without JavaScript.
 */

export const escapeHtml = (text: string): string =>
  text.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]!)

const style = `
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;background:#f4f5f7;color:#1d2330;margin:0;line-height:1.5}
main{max-width:26rem;margin:4rem auto;background:#fff;border-radius:.75rem;padding:2rem 2.25rem;box-shadow:0 1px 3px rgba(0,0,0,.12)}
h1{font-size:1.35rem;margin:0 0 1rem}
p{margin:.5rem 0 1rem}
label{display:block;font-weight:600;margin:1rem 0 .25rem}
input[type=text],input[type=email],input[type=password]{box-sizing:border-box;width:100%;font-size:1rem;padding:.55rem .65rem;border:1px solid #b7bdc8;border-radius:.4rem}
button{font-size:1rem;padding:.6rem 1.2rem;border-radius:.4rem;border:1px solid #2450c8;background:#2f5fe0;color:#fff;cursor:pointer;margin-top:1.25rem}
button.secondary{background:#fff;color:#2450c8}
.error{background:#fde8e8;color:#8a1c1c;border-radius:.4rem;padding:.6rem .8rem}
dl{display:grid;grid-template-columns:auto 1fr;gap:.25rem 1rem}dt{font-weight:600}dd{margin:0}
.actions{display:flex;gap:.75rem}
`

export const page = (title: string, body: string): string => `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<style>${style}</style>
</head>
<body>
<main>
<h1>${escapeHtml(title)}</h1>
${body}
</main>
</body>
</html>
`

const hidden = (fields: Readonly<Record<string, string>>) =>
  Object.entries(fields)
    .map(([name, value]) => `<input type="hidden" name="${escapeHtml(name)}" value="${escapeHtml(value)}">`)
    .join("\n")

const errorBox = (error: string | undefined) => (error ? `<p class="error" role="alert">${escapeHtml(error)}</p>` : "")

/** Rule 2: an invalid client or redirect address; nothing is sent anywhere. */
export const errorPage = (message: string) =>
  page("This sign-in link is not valid", `<p class="error" role="alert">${escapeHtml(message)}</p><p>Start again from the application that sent you here.</p>`)

/** Rule 4: which platform (account) to sign in to. */
export const selectorPage = (params: Readonly<Record<string, string>>, last: string | undefined, error?: string) =>
  page(
    "Choose your platform",
    `${errorBox(error)}
<form method="get" action="/oauth/authorize">
${hidden(params)}
<label for="platform">Platform address</label>
<input type="text" id="platform" name="platform" value="${escapeHtml(last ?? "")}" placeholder="your-school or your-school.example.com" required autofocus>
<button type="submit">Continue</button>
</form>`
  )

/** Rule 4: the account found, before going on. */
export const confirmationPage = (params: Readonly<Record<string, string>>, account: { name: string; address: string; subdomain: string }) =>
  page(
    "Is this your platform?",
    `<dl><dt>Account</dt><dd>${escapeHtml(account.name)}</dd><dt>Address</dt><dd>${escapeHtml(account.address)}</dd></dl>
<div class="actions">
<form method="post" action="/oauth/authorize/confirm">
${hidden({ ...params, platform: account.subdomain })}
<button type="submit">Yes, continue</button>
</form>
<form method="get" action="/oauth/authorize">
${hidden(params)}
<button type="submit" class="secondary">Choose another</button>
</form>
</div>`
  )

/** Rule 5: sign in on the account. */
export const signInPage = (flow: string, account: { name: string }, error?: string) =>
  page(
    `Sign in to ${account.name}`,
    `${errorBox(error)}
<form method="post" action="/oauth/sign-in">
${hidden({ flow })}
<label for="email">Email</label>
<input type="email" id="email" name="email" autocomplete="username" required autofocus>
<label for="password">Password</label>
<input type="password" id="password" name="password" autocomplete="current-password" required>
<button type="submit">Sign in</button>
</form>`
  )

/** Rule 5: the second factor. */
export const twoFactorPage = (flow: string, error?: string) =>
  page(
    "Two-factor authentication",
    `${errorBox(error)}
<p>Enter the 6-digit code from your authenticator app.</p>
<form method="post" action="/oauth/two-factor">
${hidden({ flow })}
<label for="code">Code</label>
<input type="text" id="code" name="code" inputmode="numeric" pattern="[0-9]{6}" maxlength="6" autocomplete="one-time-code" required autofocus>
<button type="submit">Verify</button>
</form>`
  )

/** Rule 5 and 6: consent, naming the client and the account. */
export const consentPage = (flow: string, client: string, account: { name: string; address: string }, administrator: string) =>
  page(
    "Allow access?",
    `<p><strong>${escapeHtml(client)}</strong> wants to act for you, <strong>${escapeHtml(administrator)}</strong>,
on the account <strong>${escapeHtml(account.name)}</strong> (${escapeHtml(account.address)}), through its API credential.</p>
<form method="post" action="/oauth/consent" class="actions">
${hidden({ flow })}
<button type="submit" name="decision" value="approve">Allow</button>
<button type="submit" name="decision" value="deny" class="secondary">Deny</button>
</form>`
  )
