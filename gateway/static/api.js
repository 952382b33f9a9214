// The API as the pages (/map, /console) call it: JSON in and out, problem detail for errors,
// each error one readable sentence (its detail, the wait on 429, the request id to quote). The
// token is the caller's, passed in per call: this file keeps none.
"use strict";

window.PlatformApi = (function () {
  class ApiFailure extends Error {
    constructor(status, message) {
      super(message);
      this.status = status;
    }
  }

  // `hint401`: words added to a 401's message (the page knows what to do about it).
  async function call(method, path, { token, query, body, hint401 } = {}) {
    const url = new URL(path, window.location.origin);
    for (const [key, value] of Object.entries(query || {})) {
      if (value !== undefined && value !== null && value !== "") url.searchParams.set(key, String(value));
    }
    // Problem detail for errors: `detail` names every faulty field or parameter.
    const headers = { Accept: "application/json, application/problem+json" };
    if (token) headers.Authorization = `Bearer ${token}`;
    if (body !== undefined) headers["Content-Type"] = "application/json";
    let response;
    try {
      response = await fetch(url, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        credentials: "omit",
        cache: "no-store",
      });
    } catch (error) {
      throw new ApiFailure(0, `The API cannot be reached (${error.message}).`);
    }
    const text = await response.text();
    let data = null;
    try {
      data = text ? JSON.parse(text) : null;
    } catch (_) {
      data = null;
    }
    if (!response.ok) {
      let message = (data && (data.detail || data.title)) || `HTTP ${response.status}`;
      if (response.status === 401 && hint401) message += hint401;
      if (response.status === 429) message += ` Try again in ${response.headers.get("Retry-After") || "a few"} s.`;
      const requestId = response.headers.get("X-Request-ID");
      throw new ApiFailure(response.status, `${message}${requestId ? ` (request ${requestId})` : ""}`);
    }
    return data;
  }

  return { ApiFailure, call };
})();
