// The interactive reference of /docs: Swagger UI (vendored by gateway/vendor.py) drawing
// /v1/openapi.json. "Authorize" takes a token (from POST /v1/authenticate, which can be tried
// here too); it is kept in the page's memory only and sent as `Authorization: Bearer …` by
// "Try it out".
"use strict";

(function () {
  const root = document.getElementById("swagger-ui");
  if (typeof window.SwaggerUIBundle !== "function") {
    root.textContent = "The API reference could not be drawn: its renderer did not load.";
    return;
  }
  window.ui = window.SwaggerUIBundle({
    url: "/v1/openapi.json",
    domNode: root,
    deepLinking: true,
    docExpansion: "list",
    filter: true,
    // Parameters' limits (minimum, maximum, length, pattern) beside their type and default.
    showCommonExtensions: true,
    displayRequestDuration: true,
    defaultModelsExpandDepth: 0,
    defaultModelExpandDepth: 3,
    // Never ask an outside validator (it would load an image from elsewhere).
    validatorUrl: null,
    // The token lives in this page only.
    persistAuthorization: false,
    tryItOutEnabled: false,
    requestSnippetsEnabled: true,
    presets: [window.SwaggerUIBundle.presets.apis],
    layout: "BaseLayout",
  });
})();
