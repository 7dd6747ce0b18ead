// Who the page is signed in as (the `auth` answer: token name, role, device patterns) and what that
// lets it command, by the gateway's own rule (docs/protocol.md, Roles): a `read` token sends only
// read-only commands; `control` and `admin` command the devices their patterns match. The gateway
// still decides: this only greys out what it would refuse, and says why.

/** A glob pattern (`*`, `?`, `[...]`) as a RegExp matching a whole device id. */
function globToRegExp(pattern) {
  let out = "";
  for (let i = 0; i < pattern.length; i += 1) {
    const c = pattern[i];
    if (c === "*") out += ".*";
    else if (c === "?") out += ".";
    else if (c === "[") {
      const end = pattern.indexOf("]", i + 1);
      if (end < 0) out += "\\[";
      else {
        const body = pattern.slice(i + 1, end).replace(/^!/, "^").replace(/\\/g, "\\\\");
        out += `[${body}]`;
        i = end;
      }
    } else out += c.replace(/[.+^${}()|\\]/g, "\\$&");
  }
  return new RegExp(`^${out}$`);
}

/** Everything allowed: a gateway without tokens (its `auth` answers `open`, `admin`, `*`). */
export const OPEN = { name: "open", role: "admin", devices: ["*"] };

/** "" when `who` may send `type` (described as `described`) to `device`; else the reason, as a sentence. */
export function refusalFor(who, deviceId, described) {
  if (!who) return "Sign in first: commands need a token.";
  if (who.role === "read" && !described?.read_only)
    return `Not allowed: you are signed in as ${who.name}, a read-only token (it reads and may STOP ALL).`;
  const patterns = who.devices || [];
  if (!patterns.some((pattern) => globToRegExp(pattern).test(deviceId)))
    return `Not allowed: the token ${who.name} may command only ${patterns.join(", ") || "no devices"}.`;
  return "";
}

/** The header's line: "signed in as teacher · control · thymio-*". */
export function describeWho(who) {
  if (!who) return "not signed in";
  if (who.name === "open") return "open access (no tokens configured)";
  return `signed in as ${who.name} · ${who.role} · ${who.devices.join(", ")}`;
}
