// The /console page: an account's API keys, password, limits and usage, and for administrators
// the users, all through the public API. Plain JavaScript, no build step.
//
// Security: the session's token is a variable of this closure only (never in storage, cookies
// or the URL), sent in the Authorization header, so another site cannot make the browser act
// for the user (no ambient credential: nothing to forge). The session is a token of
// SESSION_SECONDS; the page forgets it when it expires, on any 401 and on sign-out. A new API
// key is shown once in the page and forgotten when dismissed. Nothing is written to the console.
"use strict";

(function () {
  const $ = (id) => document.getElementById(id);
  const SESSION_SECONDS = 900;
  const TIERS = ["demo", "standard", "unlimited"];
  const CONFIRM_MS = 5000;

  let session = null; // {token, expiresAt, timer}
  let account = null;

  const { ApiFailure } = window.PlatformApi; // gateway/static/api.js

  // ---- small helpers ----------------------------------------------------------------------
  const { element, button } = window.PageDom; // gateway/static/dom.js
  function row(cells) {
    const tr = element("tr");
    for (const cell of cells) {
      const td = element("td");
      if (cell instanceof Node) td.append(cell);
      else td.textContent = cell === null || cell === undefined ? "" : String(cell);
      tr.append(td);
    }
    return tr;
  }
  function shortTime(iso) {
    return iso ? iso.replace("T", " ").replace(/:\d\d(\.\d+)?Z$/, " UTC") : "–";
  }
  function status(text, kind) {
    const node = $("status");
    node.textContent = text;
    node.className = kind || "";
  }
  const busy = (text) => status(text, "busy");
  const done = (text) => status(text, "done");
  function fail(error) {
    if (error instanceof ApiFailure && error.status === 401 && session) {
      signOut("The session has ended or was revoked: sign in again.", "error");
      return;
    }
    status(error instanceof ApiFailure ? error.message : `Unexpected: ${error.message}`, "error");
  }
  // A destructive button asks once more: the first click arms it for a few seconds.
  function confirming(text, confirmText, action) {
    let armed = null;
    const node = button(text, async () => {
      if (!armed) {
        node.textContent = confirmText;
        node.classList.add("armed");
        armed = setTimeout(() => {
          armed = null;
          node.textContent = text;
          node.classList.remove("armed");
        }, CONFIRM_MS);
        return;
      }
      clearTimeout(armed);
      armed = null;
      node.disabled = true;
      await action();
    });
    return node;
  }

  // ---- the API ----------------------------------------------------------------------------
  function api(method, path, body) {
    return window.PlatformApi.call(method, path, { token: session && session.token, body });
  }

  // ---- the session ------------------------------------------------------------------------
  function startSession(answer) {
    if (session) clearTimeout(session.timer);
    const expiresAt = answer.expiresAt;
    const remaining = Math.max(0, (answer.expiresIn || SESSION_SECONDS) * 1000);
    const timer = setTimeout(() => signOut("The session has ended: sign in again.", "notice"), remaining);
    session = { token: answer.token, expiresAt, timer };
    $("session-end").textContent = shortTime(expiresAt);
  }

  function signOut(message, kind) {
    if (session) clearTimeout(session.timer);
    session = null;
    account = null;
    forgetNewKey();
    for (const id of ["key-list", "user-list", "usage"]) $(id).querySelector("tbody").replaceChildren();
    for (const form of ["login-form", "password-form", "user-form"]) $(form).reset();
    $("console").hidden = true;
    $("admin").hidden = true;
    $("signin").hidden = false;
    status(message || "Signed out.", kind);
  }

  $("login-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    busy("Signing in…");
    const user = $("login-user").value.trim();
    const password = $("login-password").value;
    $("login-password").value = "";
    try {
      const answer = await api("POST", "/v1/authenticate", { user, password, duration: SESSION_SECONDS });
      startSession(answer);
      await loadAll();
      $("signin").hidden = true;
      $("console").hidden = false;
      done("Signed in.");
    } catch (error) {
      if (session) signOut();
      fail(error);
    }
  });

  $("signout-button").addEventListener("click", () => signOut());

  async function loadAll() {
    account = await api("GET", "/v1/account");
    $("session-user").textContent = account.email;
    $("account-tier").textContent = account.tier;
    $("account-role").textContent = account.role;
    await Promise.all([loadUsage(), loadKeys(), account.role === "admin" ? loadUsers() : null]);
    $("admin").hidden = account.role !== "admin";
  }

  // ---- limits and usage -------------------------------------------------------------------
  async function loadUsage() {
    const answer = await api("GET", "/v1/account/usage");
    const limit = answer.rateLimit;
    $("rate-limit").textContent = limit
      ? `${limit.requestsPerSecond} requests per second, in bursts of up to ${limit.burst}`
      : "none (unlimited)";
    const { last24Hours: day, last7Days: week } = answer.usage;
    $("usage-totals").textContent =
      `${day.requests} in the last 24 hours (${day.rateLimited} refused), ` +
      `${week.requests} in the last 7 days (${week.rateLimited} refused)`;
    const rows = answer.usage.hours
      .filter((hour) => hour.requests || hour.rateLimited)
      .map((hour) => row([shortTime(hour.hour), hour.requests, hour.rateLimited]));
    $("usage").querySelector("tbody").replaceChildren(...rows);
  }

  $("refresh-button").addEventListener("click", async () => {
    busy("Refreshing…");
    try {
      await loadAll();
      done("Up to date.");
    } catch (error) {
      fail(error);
    }
  });

  // ---- API keys ---------------------------------------------------------------------------
  async function loadKeys() {
    const answer = await api("GET", "/v1/account/apikeys");
    const rows = answer.apiKeys.map((key) => {
      const revoke = key.active ? confirming("Revoke", "Really revoke?", () => revokeKey(key)) : "";
      if (revoke) revoke.dataset.keyId = String(key.id);
      const tr = row([key.id, `${key.prefix}…`, shortTime(key.createdAt), keyState(key), revoke]);
      tr.dataset.keyId = String(key.id);
      tr.className = key.active ? "active" : key.revokedAt ? "revoked" : "expired";
      return tr;
    });
    if (!rows.length) rows.push(row(["", "No keys yet.", "", "", ""]));
    $("key-list").querySelector("tbody").replaceChildren(...rows);
  }

  function keyState(key) {
    if (key.revokedAt) return `revoked ${shortTime(key.revokedAt)}`;
    if (!key.active) return `expired ${shortTime(key.expiresAt)}`;
    return key.expiresAt ? `active, expires ${shortTime(key.expiresAt)}` : "active";
  }

  $("create-key-button").addEventListener("click", async () => {
    busy("Creating a key…");
    try {
      const answer = await api("POST", "/v1/account/apikeys");
      $("new-key-value").value = answer.apikey;
      $("new-key").hidden = false;
      await loadKeys();
      done(`Key ${answer.id} created: copy it now, it is not shown again.`);
    } catch (error) {
      fail(error);
    }
  });

  function forgetNewKey() {
    $("new-key-value").value = "";
    $("new-key").hidden = true;
  }
  $("dismiss-key-button").addEventListener("click", forgetNewKey);
  $("copy-key-button").addEventListener("click", async () => {
    try {
      await navigator.clipboard.writeText($("new-key-value").value);
      done("Copied.");
    } catch (_) {
      $("new-key-value").select(); // no clipboard access (plain http): selected for Ctrl-C
      status("Selected: copy it with Ctrl-C.", "notice");
    }
  });

  async function revokeKey(key) {
    busy(`Revoking key ${key.id}…`);
    try {
      await api("DELETE", `/v1/account/apikeys/${encodeURIComponent(key.id)}`);
      await loadKeys();
      done(`Key ${key.id} (${key.prefix}…) revoked: it gives no more tokens, and its tokens stop working within seconds.`);
    } catch (error) {
      fail(error);
    }
  }

  // ---- password ---------------------------------------------------------------------------
  $("password-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const body = {
      currentPassword: $("current-password").value,
      newPassword: $("new-password").value,
      duration: SESSION_SECONDS,
    };
    if (body.newPassword !== $("repeat-password").value) {
      status("The two new passwords differ.", "error");
      return;
    }
    busy("Changing the password…");
    try {
      startSession(await api("POST", "/v1/account/password", body));
      $("password-form").reset();
      done("Password changed. Every other session has ended; this one goes on.");
    } catch (error) {
      fail(error);
    }
  });

  // ---- administrators ---------------------------------------------------------------------
  async function loadUsers() {
    const answer = await api("GET", "/v1/admin/users");
    const rows = answer.users.map((user) => {
      const tr = row([user.id, user.email, tierSelect(user), user.role, user.activeApiKeys,
        user.disabled ? "disabled" : "active", stateButton(user)]);
      tr.dataset.userId = String(user.id);
      tr.dataset.email = user.email;
      return tr;
    });
    $("user-list").querySelector("tbody").replaceChildren(...rows);
  }

  function tierSelect(user) {
    const select = element("select", null, "tier");
    select.setAttribute("aria-label", `Tier of ${user.email}`);
    for (const tier of TIERS) {
      const option = element("option", tier);
      option.value = tier;
      option.selected = tier === user.tier;
      select.append(option);
    }
    // A new tier revokes the user's tokens: this session's, for one's own account.
    select.disabled = Boolean(account && user.id === account.id);
    select.addEventListener("change", () =>
      changeUser(user, { tier: select.value }, `${user.email} now has the tier ${select.value}; its earlier tokens are revoked.`));
    return select;
  }

  function stateButton(user) {
    if (account && user.id === account.id) return "";
    if (user.disabled) {
      return button("Enable", () => changeUser(user, { disabled: false }, `${user.email} enabled.`), "enable");
    }
    const node = confirming("Disable", "Really disable?", () =>
      changeUser(user, { disabled: true }, `${user.email} disabled: logins stop now, its tokens within seconds.`));
    node.classList.add("disable");
    return node;
  }

  async function changeUser(user, changes, message) {
    busy(`Changing ${user.email}…`);
    try {
      await api("PATCH", `/v1/admin/users/${encodeURIComponent(user.id)}`, changes);
      await loadUsers();
      done(message);
    } catch (error) {
      fail(error);
    }
  }

  $("user-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const body = {
      email: $("new-user-email").value.trim(),
      password: $("new-user-password").value,
      tier: $("new-user-tier").value,
      role: $("new-user-admin").checked ? "admin" : "user",
    };
    busy(`Creating ${body.email}…`);
    try {
      const user = await api("POST", "/v1/admin/users", body);
      $("user-form").reset();
      await loadUsers();
      done(`User ${user.email} created (tier ${user.tier}, role ${user.role}).`);
    } catch (error) {
      fail(error);
    }
  });
})();
