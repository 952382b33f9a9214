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

  // Accessibility fixes to Swagger UI's own markup, as it draws (axe-core, issue 32): the
  // servers select and the token input get names, and the deep link inside each operation's
  // summary button (a link nested in a button) is unwrapped; the button keeps the URL's hash.
  function mend(node) {
    const servers = node.querySelector && node.querySelector("#servers");
    if (servers && !servers.getAttribute("aria-label")) servers.setAttribute("aria-label", "Server");
    for (const input of node.querySelectorAll ? node.querySelectorAll(".modal-ux input:not([aria-label])") : []) {
      input.setAttribute("aria-label", "Bearer token");
    }
    for (const link of node.querySelectorAll ? node.querySelectorAll(".opblock-summary-control a.nostyle") : []) {
      link.replaceWith(...link.childNodes);
    }
  }
  new MutationObserver((changes) => {
    for (const change of changes) for (const node of change.addedNodes) if (node.nodeType === 1) mend(node);
  }).observe(root, { childList: true, subtree: true });
  mend(root);
})();
