// Starts Swagger UI on /docs with this server's OpenAPI document (a file, not an inline
// script, so the page keeps a strict Content-Security-Policy).
"use strict";
document.addEventListener("DOMContentLoaded", () => {
  window.ui = SwaggerUIBundle({
    url: "/openapi.json",
    dom_id: "#swagger-ui",
    deepLinking: true,
    presets: [SwaggerUIBundle.presets.apis],
    layout: "BaseLayout",
  });
});
