// The /map demo page: the public API called from the browser with Leaflet (vendored by
// gateway/vendor.py) drawing the answers. Plain JavaScript, no build step. The token is held in
// a variable of this closure only: never written to storage, cookies or the URL.
"use strict";

(function () {
  const $ = (id) => document.getElementById(id);
  const ROUTE_COLOURS = ["#1565c0", "#7b8794", "#9aa5b1"];
  const ISOCHRONE_COLOURS = ["#2e7d32", "#f9a825", "#ef6c00", "#c62828"];

  let token = null;
  const capabilities = { alternatives: true, matrix: false, isochrone: false };
  const state = { from: null, to: null, routes: [], stops: [], coverageBounds: null, tourPositions: null };

  const { ApiFailure } = window.PlatformApi; // gateway/static/api.js

  // ---- the map ----------------------------------------------------------------------------
  const map = L.map("map", { worldCopyJump: true }).setView([30, 10], 2);
  window.demoMap = map; // for tests and the console: it holds no token
  const tileUrl = document.body.dataset.tileUrl || "";
  if (tileUrl) {
    const tiles = L.tileLayer(tileUrl, {
      maxZoom: 19,
      attribution: escapeHtml(document.body.dataset.tileAttribution || ""),
    });
    let warned = false;
    tiles.on("tileerror", () => {
      if (!warned) {
        warned = true;
        $("tiles-note").hidden = false;
      }
    });
    tiles.addTo(map);
  }
  const layers = {};
  for (const name of ["coverage", "isochrone", "routes", "tour", "search", "ends", "stops"]) {
    layers[name] = L.layerGroup().addTo(map);
  }

  // ---- small helpers ----------------------------------------------------------------------
  function escapeHtml(text) {
    const span = document.createElement("span");
    span.textContent = text;
    return span.innerHTML;
  }
  const { element, button } = window.PageDom; // gateway/static/dom.js
  const round5 = (x) => Math.round(x * 1e5) / 1e5;
  const latLon = (p) => `${p.lat},${p.lon}`;
  const shown = (p) => `${p.lat.toFixed(5)}, ${p.lon.toFixed(5)}`;
  const toLatLngs = (coordinates) => coordinates.map(([lon, lat]) => [lat, lon]);
  // A distance in metres as the "Units" select says (or `units`, the units an answer was written in):
  // km and m, or miles and, below a tenth of a mile, feet.
  function metres(m, units = $("units").value) {
    if (units === "imperial") {
      const miles = m / 1609.344;
      return miles >= 0.1 ? `${miles.toFixed(miles >= 10 ? 0 : 1)} mi` : `${Math.round(m / 0.3048)} ft`;
    }
    return m >= 1000 ? `${(m / 1000).toFixed(m >= 10000 ? 0 : 1)} km` : `${Math.round(m)} m`;
  }
  function seconds(s) {
    if (s < 60) return `${Math.round(s)} s`;
    const minutes = Math.round(s / 60);
    return minutes < 60 ? `${minutes} min` : `${Math.floor(minutes / 60)} h ${minutes % 60} min`;
  }
  function clockTime(iso) {
    const match = /T(\d\d:\d\d)/.exec(iso || "");
    return match ? match[1] : iso;
  }
  function status(text, kind) {
    const node = $("status");
    node.textContent = text;
    node.className = kind || "";
  }
  const busy = (text) => status(text, "busy");
  const notice = (text) => status(text, "notice");
  function fail(error) {
    status(error instanceof ApiFailure ? error.message : `Unexpected: ${error.message}`, "error");
  }
  function profile() {
    return { vehicle: $("vehicle").value || undefined, type: $("route-type").value || undefined };
  }
  // The route's wording: its instructions' language and units (GET /v1/route's `language` and `units`).
  function wording() {
    return { language: $("language").value || undefined, units: $("units").value || undefined };
  }
  // The "Leaving at" field as ISO 8601 with this browser's UTC offset (the API needs one);
  // undefined when empty: the answers then hold at any time.
  function departure() {
    const value = $("departure").value;
    if (!value) return undefined;
    const when = new Date(value);
    const offset = -when.getTimezoneOffset();
    const pad = (n) => String(Math.floor(Math.abs(n))).padStart(2, "0");
    const sign = offset >= 0 ? "+" : "-";
    return `${value.length === 16 ? `${value}:00` : value}${sign}${pad(offset / 60)}:${pad(offset % 60)}`;
  }
  // What an answer at a time says: when it leaves and the rules by time it met.
  function timeNote(answer) {
    if (!answer.departureTime) return "";
    const rules = answer.timeRules || [];
    const met = rules.length ? `${rules.length} rule${rules.length === 1 ? "" : "s"} by time on the way` : "no rule by time on the way";
    return ` Leaving ${clockTime(answer.departureTime)}: ${met}.`;
  }
  function mode() {
    return document.querySelector("input[name=mode]:checked").value;
  }

  // ---- the instructions' language --------------------------------------------------------
  // The languages GET /v1/route writes instructions in: INSTRUCTION_LANGUAGES of
  // common/vocabulary.py, in its order (/v1/providers, where the vehicles come from, does not
  // list them; tests/integration/test_web_pages.py checks that the two lists agree).
  const INSTRUCTION_LANGUAGES = [
    "ar", "ca", "da", "de", "en", "eo", "es", "es-ES", "fi", "fr", "he", "hu", "id", "it", "ja", "ko",
    "my", "nl", "no", "pl", "pt-BR", "pt-PT", "ro", "ru", "sl", "sv", "tr", "uk", "vi", "yo", "zh-Hans",
  ];
  // Tags of the same written language filed under another code (common/languages.py ALIASES).
  const LANGUAGE_ALIASES = { nb: "no", nn: "no", zh: "zh-hans", "zh-cn": "zh-hans", "zh-sg": "zh-hans" };

  // The supported code a BCP 47 tag means, by the API's own rule (common/languages.py): the tag
  // itself (any case), else its primary language ("de-AT" → "de"; "pt" → "pt-BR"), else English.
  function instructionLanguage(tag) {
    const byLower = new Map(INSTRUCTION_LANGUAGES.map((code) => [code.toLowerCase(), code]));
    const wanted = String(tag || "").trim().toLowerCase().replace(/_/g, "-");
    const primary = wanted.split("-")[0];
    for (const candidate of [wanted, LANGUAGE_ALIASES[wanted], primary, LANGUAGE_ALIASES[primary]]) {
      if (candidate && byLower.has(candidate)) return byLower.get(candidate);
    }
    return INSTRUCTION_LANGUAGES.find((code) => primary && code.toLowerCase().split("-")[0] === primary) || "en";
  }

  // Each language named in itself ("de – Deutsch"), the code alone where the browser cannot name it.
  function languageOption(code) {
    let name = "";
    try {
      name = new Intl.DisplayNames([code], { type: "language" }).of(code) || "";
    } catch (_) {
      name = "";
    }
    const option = element("option", name && name !== code ? `${code} – ${name}` : code);
    option.value = code;
    option.lang = code;
    return option;
  }

  $("language").replaceChildren(...INSTRUCTION_LANGUAGES.map(languageOption));
  $("language").value = instructionLanguage(navigator.language);

  // ---- the API ----------------------------------------------------------------------------
  function api(method, path, { query, body } = {}) {
    return window.PlatformApi.call(method, path, { token, query, body, hint401: token ? " Sign in again." : "" });
  }

  // ---- signing in and out -----------------------------------------------------------------
  $("login-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    busy("Signing in…");
    try {
      const answer = await api("POST", "/v1/authenticate", {
        body: { user: $("login-user").value.trim(), password: $("login-password").value },
      });
      $("login-password").value = "";
      await startSession(answer.token, answer.expiresAt);
    } catch (error) {
      fail(error);
    }
  });

  // The account console's API keys: a UUID (auth_service.accounts.new_api_key).
  const API_KEY = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

  $("token-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const pasted = $("token-input").value.trim().replace(/^Bearer\s+/i, "");
    $("token-input").value = "";
    try {
      if (API_KEY.test(pasted)) {
        // An API key is not a token: exchanged for one (POST /v1/authenticate/apikey).
        busy("Exchanging the API key for a token…");
        const answer = await api("POST", "/v1/authenticate/apikey", { body: { apikey: pasted } });
        await startSession(answer.token, answer.expiresAt);
      } else {
        busy("Checking the token…");
        await startSession(pasted, null);
      }
    } catch (error) {
      fail(error);
    }
  });

  $("signout-button").addEventListener("click", () => {
    token = null;
    for (const layer of Object.values(layers)) layer.clearLayers();
    Object.assign(state, { from: null, to: null, routes: [], stops: [], coverageBounds: null, tourPositions: null });
    for (const id of ["search-results", "routes", "steps", "stop-list", "tour", "matrix", "suggestions"]) {
      $(id).replaceChildren();
    }
    $("route-from").textContent = $("route-to").textContent = "–";
    $("tools").hidden = $("session").hidden = true;
    $("signin").hidden = false;
    status("Signed out.");
  });

  async function startSession(newToken, expiresAt) {
    if (!newToken) throw new ApiFailure(0, "No token given.");
    token = newToken;
    let providers;
    try {
      providers = await api("GET", "/v1/providers");
    } catch (error) {
      token = null;
      throw error;
    }
    $("signin").hidden = true;
    $("session").hidden = $("tools").hidden = false;
    $("session-text").textContent = expiresAt ? `Signed in until ${expiresAt}.` : "Signed in with the token.";
    // An outage stays said until it ends (useProviders), never overwritten by "Ready".
    if (useProviders(providers)) status("Ready: search, or click on the map.");
  }

  function useProviders(answer) {
    const routing = (answer && answer.routing) || {};
    const list = routing.available ? routing.providers || [] : [];
    const byDefault = list.find((p) => p.default) || list[0];
    const can = (name) => list.some((p) => p.capabilities && p.capabilities[name]);
    capabilities.matrix = can("matrix");
    capabilities.isochrone = can("isochrone");
    capabilities.alternatives = !byDefault || Boolean(byDefault.capabilities && byDefault.capabilities.alternatives);
    fillSelect($("vehicle"), byDefault ? byDefault.vehicles : ["car"]);
    fillSelect($("route-type"), byDefault ? byDefault.types : ["fastest"]);
    $("alternatives").disabled = !capabilities.alternatives;
    $("matrix-button").hidden = !capabilities.matrix;
    $("mode-isochrone").hidden = !capabilities.isochrone;
    $("isochrone").hidden = !capabilities.isochrone;
    drawCoverage(routing.coverage);
    if (!routing.available) {
      const missing = [!capabilities.matrix && "the matrix", !capabilities.isochrone && "reachable areas"].filter(Boolean);
      status(`Routing is not available: ${routing.reason || "unknown reason"}. Routes, tours${
        missing.length ? `, ${missing.join(" and ")}` : ""} are off until it is back; search still works.`, "error");
      watchOutage();
      return false;
    }
    return true;
  }

  // While routing is down, /v1/providers is asked again every 15 s: the page says when it is back.
  let outageTimer = null;
  function watchOutage() {
    clearTimeout(outageTimer);
    outageTimer = setTimeout(async () => {
      if (!token) return;
      try {
        if (useProviders(await api("GET", "/v1/providers"))) status("Routing is back: search, or click on the map.");
      } catch (error) {
        watchOutage();
      }
    }, 15000);
  }

  function fillSelect(select, values) {
    select.replaceChildren(...(values || []).map((value) => element("option", value)));
  }

  function drawCoverage(coverage) {
    layers.coverage.clearLayers();
    state.coverageBounds = null;
    $("coverage-text").textContent = "";
    if (!coverage) return;
    if (coverage.outline) {
      L.geoJSON(coverage.outline, {
        interactive: false,
        className: "coverage-outline",
        style: { color: "#558b2f", weight: 2, dashArray: "6 4", fill: true, fillOpacity: 0.04 },
      }).addTo(layers.coverage);
    }
    if (coverage.bounds) {
      const [west, south, east, north] = coverage.bounds;
      state.coverageBounds = L.latLngBounds([south, west], [north, east]);
      map.fitBounds(state.coverageBounds, { padding: [20, 20] });
    }
    if (coverage.attribution) map.attributionControl.addAttribution(escapeHtml(coverage.attribution));
    const areas = coverage.areas || [];
    const describe = (names) => {
      $("coverage-text").textContent = `Routing map: ${names.length ? `${names.length} area(s): ${names.join(", ")}` : "loaded"}${
        coverage.importedAt ? `, imported ${coverage.importedAt}` : ""
      } (the dashed outline).`;
    };
    describe(areas.map((_, n) => `area ${n + 1}`));
    nameAreas(areas).then(describe);
  }

  // Each area named by the place the geocoder finds at its centre (its city, else its label);
  // an area the geocoder cannot name keeps its number. The six largest only: a demo token's
  // burst is 10 requests (RATE_LIMITS), and the page's own calls need the rest.
  const NAMED_AREAS = 6;
  async function nameAreas(areas) {
    return Promise.all(areas.map(async ([west, south, east, north], n) => {
      if (n >= NAMED_AREAS) return `area ${n + 1}`;
      try {
        const answer = await api("GET", "/v1/geocoder/reverse", { query: { lat: (south + north) / 2, lon: (west + east) / 2 } });
        // Only a place inside the area names it (a geocoder on another map answers its own nearest).
        const found = (answer.results || []).find(({ coordinate: { lat, lon } }) =>
          lat >= south && lat <= north && lon >= west && lon <= east);
        return (found && (found.address.city || found.label)) || `area ${n + 1}`;
      } catch (error) {
        return `area ${n + 1}`;
      }
    }));
  }

  $("fit-coverage").addEventListener("click", () => {
    if (state.coverageBounds) map.fitBounds(state.coverageBounds, { padding: [20, 20] });
  });

  // ---- search with autocomplete -----------------------------------------------------------
  let suggestTimer = null;
  let suggestSequence = 0;
  const searchInput = $("search-input");

  searchInput.addEventListener("input", () => {
    clearTimeout(suggestTimer);
    suggestTimer = setTimeout(suggest, 250);
  });
  searchInput.addEventListener("keydown", (event) => {
    if (event.key === "ArrowDown" && !$("suggestions").hidden) {
      event.preventDefault();
      const first = $("suggestions").querySelector("button");
      if (first) first.focus();
    } else if (event.key === "Escape") {
      hideSuggestions();
    }
  });
  $("suggestions").addEventListener("keydown", (event) => {
    const buttons = [...$("suggestions").querySelectorAll("button")];
    const at = buttons.indexOf(document.activeElement);
    if (event.key === "ArrowDown" && at < buttons.length - 1) buttons[at + 1].focus();
    else if (event.key === "ArrowUp") (at > 0 ? buttons[at - 1] : searchInput).focus();
    else if (event.key === "Escape") {
      hideSuggestions();
      searchInput.focus();
    } else return;
    event.preventDefault();
  });

  function hideSuggestions() {
    suggestSequence += 1; // answers still on their way are dropped
    $("suggestions").replaceChildren();
    $("suggestions").hidden = true;
  }

  async function suggest() {
    const text = searchInput.value;
    if (!token || text.trim().length < 2) {
      hideSuggestions();
      return;
    }
    const sequence = ++suggestSequence;
    const centre = map.wrapLatLng(map.getCenter());
    try {
      const answer = await api("GET", "/v1/geocoder/autocomplete", {
        query: { text: text.slice(0, 500), limit: 6, focus: `${round5(centre.lat)},${round5(centre.lng)}` },
      });
      if (sequence !== suggestSequence) return;
      const items = answer.results.map((result) => {
        const item = element("li");
        item.setAttribute("role", "option");
        item.append(
          button(result.label, () => {
            searchInput.value = result.label;
            hideSuggestions();
            geocode(result.label);
          }),
        );
        return item;
      });
      $("suggestions").replaceChildren(...items);
      $("suggestions").hidden = items.length === 0;
    } catch (error) {
      if (sequence === suggestSequence) fail(error);
    }
  }

  $("search-form").addEventListener("submit", (event) => {
    event.preventDefault();
    clearTimeout(suggestTimer);
    hideSuggestions();
    if (searchInput.value.trim()) geocode(searchInput.value.trim());
  });

  const COORDINATES = /^\s*(-?\d{1,2}(?:\.\d+)?)\s*,\s*(-?\d{1,3}(?:\.\d+)?)\s*$/;
  // A search shows its 5 best results; a search for a kind of place ("Apotheke München",
  // "restaurant near 48.137,11.575") up to 10 of them. The geocoder is asked for 10 and an answer
  // of another sort keeps its first 5: the same results as a request for 5 (it ranks, then cuts).
  const SEARCH_RESULTS = 5;
  const PLACES_OF_A_KIND = 10;

  // An answer is places of a kind when its best result is a POI and another POI of the answer
  // has the same category (OSM key=value): those are all drawn and listed to pick one.
  function kindOf(results) {
    const [first] = results;
    if (!first || first.matchLevel !== "poi" || !first.category) return null;
    const others = results.slice(1).filter((r) => r.matchLevel === "poi" && r.category === first.category);
    return others.length ? first.category : null;
  }

  // A POI's label is led by its name: the rest of it says where it is ("" for a result without
  // a name: its label is all there is).
  function whereIs(result) {
    if (!result.name) return "";
    const lead = `${result.name}, `;
    return result.label.startsWith(lead) ? result.label.slice(lead.length) : result.label;
  }

  async function geocode(text) {
    busy("Searching…");
    layers.search.clearLayers();
    $("search-results").replaceChildren();
    try {
      // "lat,lon" typed is a point itself: keyboard entry without the geocoder.
      const typed = COORDINATES.exec(text);
      const answer = typed
        ? { results: [{ coordinate: { lat: Number(typed[1]), lon: Number(typed[2]) }, label: text, type: "coordinates", score: 1 }] }
        : await api("GET", "/v1/geocoder", { query: { address: text.slice(0, 500), limit: PLACES_OF_A_KIND } });
      const kind = kindOf(answer.results || []);
      if (kind) {
        showPlaces(answer.results, kind);
        return;
      }
      const results = (answer.results || []).slice(0, SEARCH_RESULTS);
      const bounds = [];
      for (const result of results) {
        const point = { lat: result.coordinate.lat, lon: result.coordinate.lon, name: result.label };
        L.circleMarker([point.lat, point.lon], {
          radius: 7,
          className: "geocode-result",
          color: "#ad1457",
          fillOpacity: 0.8,
        })
          .bindTooltip(element("span", result.label))
          .addTo(layers.search);
        bounds.push([point.lat, point.lon]);
        const item = element("li", `${result.label} `);
        item.append(
          element("span", `(${result.type}, score ${result.score.toFixed(2)})`, "detail"),
          button("from", () => setRoutePoint(point, "from")),
          button("to", () => setRoutePoint(point, "to")),
          button("stop", () => addStop(point)),
        );
        $("search-results").append(item);
      }
      if (bounds.length === 1) map.setView(bounds[0], 16);
      else if (bounds.length > 1) map.fitBounds(bounds, { padding: [40, 40], maxZoom: 16 });
      if (results.length) status(`${results.length} found.`);
      else notice((answer.notes && answer.notes[0] && answer.notes[0].message) || "Nothing found.");
    } catch (error) {
      fail(error);
    }
  }

  // Places of a kind: every one a marker (its name and address on hover, and in a popup with the
  // buttons on a click), the map fitted to them all, and a list to pick one from with the keyboard.
  // The name's button picks one: the map centred on it as on a single result (zoom 16), its popup
  // open, the others still drawn; "from", "to" and "stop" use it as they use any result.
  function showPlaces(results, category) {
    const markers = [];
    const items = [];
    let picked = -1;
    // The place picked: its marker larger and amber, its entry in bold and said to be the current one.
    const pick = (n) => {
      if (picked >= 0) {
        markers[picked].setStyle({ fillColor: "#ad1457" }).setRadius(7);
        items[picked].classList.remove("selected");
        items[picked].querySelector(".place-name").removeAttribute("aria-current");
      }
      picked = n;
      markers[n].setStyle({ fillColor: "#ffb300" }).setRadius(10).bringToFront();
      items[n].classList.add("selected");
      items[n].querySelector(".place-name").setAttribute("aria-current", "true");
    };
    results.forEach((result, n) => {
      const point = { lat: result.coordinate.lat, lon: result.coordinate.lon, name: result.label };
      const name = result.name || result.label;
      const where = whereIs(result);
      const said = (node) => {
        node.append(element("strong", name));
        if (where) node.append(element("br"), element("span", where));
        return node;
      };
      const uses = (then = () => {}) => [
        button("from", () => { then(); setRoutePoint(point, "from"); }),
        button("to", () => { then(); setRoutePoint(point, "to"); }),
        button("stop", () => { then(); addStop(point); }),
      ];
      const popup = said(element("div", null, "place-popup"));
      const actions = element("p");
      actions.append(...uses(() => map.closePopup()));
      popup.append(actions);
      const marker = L.circleMarker([point.lat, point.lon], {
        radius: 7,
        className: "geocode-result geocode-place",
        color: "#ad1457",
        fillOpacity: 0.8,
        bubblingMouseEvents: false, // a click picks the place, not a point of the map under it
      })
        .bindTooltip(said(element("span")))
        .bindPopup(popup)
        .on("click", () => {
          pick(n);
          items[n].scrollIntoView({ block: "nearest" });
        })
        .addTo(layers.search);
      markers.push(marker);
      const item = element("li");
      const show = button(name, () => {
        pick(n);
        map.setView([point.lat, point.lon], 16);
        marker.openPopup();
      }, "place-name");
      item.append(
        show,
        element("span", where ? ` ${where} ` : " ", "place-where"),
        element("span", `(${result.matchLevel || result.type}, score ${result.score.toFixed(2)})`, "detail"),
        ...uses(),
      );
      items.push(item);
    });
    $("search-results").replaceChildren(...items);
    map.fitBounds(markers.map((m) => m.getLatLng()), { padding: [40, 40], maxZoom: 16 });
    const kind = category.split("=").pop().replace(/_/g, " "); // "amenity=pharmacy": pharmacy
    status(`${results.length} places found (${kind}), all on the map: pick one in the list or on the map.`);
  }

  // ---- clicks on the map --------------------------------------------------------------------
  map.on("click", (event) => {
    if (!token) {
      notice("Sign in first.");
      return;
    }
    const where = map.wrapLatLng(event.latlng);
    const point = { lat: round5(where.lat), lon: round5(where.lng) };
    if (mode() === "route") setRoutePoint(point, null);
    else if (mode() === "stops") addStop(point);
    else isochrone(point);
  });

  // ---- routes -----------------------------------------------------------------------------
  function setRoutePoint(point, which) {
    const end = which || (!state.from || state.to ? "from" : "to");
    if (end === "from" && !which) state.to = null; // a new start begins a new route
    state[end] = point;
    layers.routes.clearLayers();
    $("routes").replaceChildren();
    $("steps").replaceChildren();
    drawRouteEnds();
    $("route-button").disabled = !(state.from && state.to);
    if (state.from && state.to) route();
    else status("Now click where the route should end.");
  }

  function drawRouteEnds() {
    layers.ends.clearLayers();
    for (const [end, colour] of [["from", "#2e7d32"], ["to", "#c62828"]]) {
      const point = state[end];
      $(`route-${end}`).textContent = point ? point.name || shown(point) : "–";
      if (point) {
        L.circleMarker([point.lat, point.lon], {
          radius: 8, color: "#fff", weight: 2, fillColor: colour, fillOpacity: 1,
          className: `route-end route-${end}`, interactive: false,
        }).addTo(layers.ends);
      }
    }
  }

  $("route-button").addEventListener("click", () => route());

  async function route() {
    busy("Routing…");
    const alternatives = capabilities.alternatives ? $("alternatives").value : 0;
    try {
      const answer = await api("GET", "/v1/route", {
        query: {
          from: latLon(state.from), to: latLon(state.to), alternatives, ...profile(), departureTime: departure(), ...wording(),
        },
      });
      state.routes = answer.routes || [];
      // The language and units its instructions are written in: its distances and steps shown so too.
      Object.assign(state, { routeLanguage: answer.language, routeUnits: answer.units });
      showRoute(0);
      const moved = drawSnaps([[state.from, answer.snappedFrom, "start"], [state.to, answer.snappedTo, "end"]]);
      const found = state.routes.length;
      status(`${found} route${found === 1 ? "" : "s"} (${answer.provider}).${timeNote(answer)}${moved}`, moved ? "notice" : undefined);
    } catch (error) {
      layers.routes.clearLayers();
      failAt(error, { from: state.from, to: state.to });
    }
  }

  // Dashed lines from each clicked point to where the route starts or ends on a road; a point
  // moved more than MOVED_NOTE_M is said in the status line.
  const MOVED_NOTE_M = 100;
  function drawSnaps(pairs) {
    const notes = [];
    const length = (m) => metres(m, state.routeUnits);
    for (const [clicked, snapped, role] of pairs) {
      if (!clicked || !snapped) continue;
      if (snapped.distance > 1) {
        L.polyline([[clicked.lat, clicked.lon], [snapped.lat, snapped.lon]], {
          color: "#555", weight: 2, dashArray: "4 4", className: "snap-line", interactive: false,
        }).addTo(layers.routes);
      }
      if (snapped.distance > MOVED_NOTE_M) {
        notes.push(`the ${role} was moved ${length(snapped.distance)} to the nearest road${snapped.name ? ` (${snapped.name})` : ""}`);
      }
    }
    return notes.length ? ` Note: ${notes.join("; ")}.` : "";
  }

  // An error that names a point (`from: …`, `to: …`, `stops[2]: …`) rings that point in red.
  function failAt(error, points) {
    fail(error);
    for (const [name, point] of Object.entries(points)) {
      if (point && error.message && new RegExp(`(^|; )${name.replace(/[[\]]/g, "\\$&")}: `).test(error.message)) {
        L.circleMarker([point.lat, point.lon], {
          radius: 12, color: "#c62828", weight: 3, fill: false, className: "failed-point", interactive: false,
        }).addTo(layers.routes);
      }
    }
  }

  function showRoute(selected) {
    layers.routes.clearLayers();
    const length = (m) => metres(m, state.routeUnits); // in the units of the answer's instructions
    const order = state.routes.map((_, i) => i).filter((i) => i !== selected);
    order.push(selected); // the selected route drawn last, on top
    for (const i of order) {
      const line = L.polyline(toLatLngs(state.routes[i].geometry.coordinates), {
        color: i === selected ? ROUTE_COLOURS[0] : ROUTE_COLOURS[Math.min(i + 1, 2)],
        weight: i === selected ? 6 : 4,
        opacity: i === selected ? 0.9 : 0.7,
        className: `route-line ${i === selected ? "route-selected" : "route-alternative"}`,
        interactive: false, // clicks go to the map (stops on a route); the list selects a route
      });
      line.addTo(layers.routes);
    }
    const list = state.routes.map((r, i) => {
      const item = element("li", null, i === selected ? "selected" : "");
      item.append(button(`${i === 0 ? "Best" : "Alternative"}: ${length(r.distance)}, ${seconds(r.duration)}`, () => showRoute(i)));
      return item;
    });
    $("routes").replaceChildren(...list);
    const steps = [];
    for (const leg of state.routes[selected].legs || []) {
      for (const step of leg.steps || []) {
        const item = element("li", `${step.instruction || (step.name ? `Follow ${step.name}` : "Continue")} `);
        item.dir = "auto"; // Arabic and Hebrew read from the right
        if (step.distance > 0) item.append(element("span", length(step.distance), "distance"));
        steps.push(item);
      }
    }
    $("steps").replaceChildren(...steps);
    // Said in the answer's language by screen readers, whatever the page's own.
    if (state.routeLanguage) $("steps").lang = state.routeLanguage;
    else $("steps").removeAttribute("lang");
  }

  // ---- stops: optimization and matrix -------------------------------------------------------
  function addStop(point) {
    state.stops.push({ lat: point.lat, lon: point.lon, name: point.name || `Stop ${state.stops.length + 1}` });
    clearTour();
    drawStops();
    status(`${state.stops.length} stop${state.stops.length === 1 ? "" : "s"}.`);
  }

  function clearTour() {
    state.tourPositions = null;
    layers.tour.clearLayers();
    $("tour").replaceChildren();
    $("matrix").replaceChildren();
  }

  function drawStops() {
    layers.stops.clearLayers();
    const items = state.stops.map((stop, i) => {
      const label = state.tourPositions ? String(state.tourPositions[i] + 1) : String(i + 1);
      L.marker([stop.lat, stop.lon], {
        icon: L.divIcon({ className: "stop-marker", html: escapeHtml(label), iconSize: [24, 24] }),
        title: stop.name,
        keyboard: false,
      }).addTo(layers.stops);
      const item = element("li", `${stop.name} (${shown(stop)}) `);
      item.append(
        button("×", () => {
          state.stops.splice(i, 1);
          clearTour();
          drawStops();
        }),
      );
      return item;
    });
    $("stop-list").replaceChildren(...items);
    $("optimize-button").disabled = state.stops.length < 2;
    $("matrix-button").disabled = state.stops.length < 1;
  }

  $("clear-stops").addEventListener("click", () => {
    state.stops = [];
    clearTour();
    drawStops();
  });
  $("round-trip").addEventListener("change", clearTour);

  $("optimize-button").addEventListener("click", async () => {
    busy("Optimizing…");
    const roundTrip = $("round-trip").checked;
    const body = state.stops.map((stop, i) => ({
      name: stop.name,
      coordinate: { lat: stop.lat, lon: stop.lon },
      start: i === 0,
      destination: roundTrip && i === 0,
    }));
    try {
      const answer = await api("POST", "/v1/optimize/stops", { query: { ...profile(), startTime: departure() }, body });
      clearTour();
      L.polyline(toLatLngs(answer.geometry.coordinates), {
        color: "#6a1b9a", weight: 5, opacity: 0.8, className: "tour-line", interactive: false,
      }).addTo(layers.tour);
      state.tourPositions = [];
      const items = answer.stops.map((visit, n) => {
        if (!(n === answer.stops.length - 1 && answer.roundTrip)) state.tourPositions[visit.index] = visit.position;
        const item = element("li", `${visit.name} `);
        const leg = n === 0 ? "start" : `${metres(visit.distance)}, ${seconds(visit.duration)} from the previous stop`;
        item.append(element("span", `arrives ${clockTime(visit.arrival)}; ${leg}`, "detail"));
        return item;
      });
      // Stops no road joins with the start: listed, and ringed in red on the map.
      for (const left of answer.unassigned || []) {
        items.push(element("li", `${left.name}: left out, ${left.message}`, "unassigned"));
        L.circleMarker([left.coordinate.lat, left.coordinate.lon], {
          radius: 11, color: "#c62828", weight: 3, fill: false, className: "unassigned-stop", interactive: false,
        }).addTo(layers.tour);
      }
      $("tour").replaceChildren(...items);
      drawStops();
      const leftOut = (answer.unassigned || []).length;
      status(`Tour: ${metres(answer.distance)}, ${seconds(answer.duration)} (${answer.solver.method}${
        answer.solver.optimal ? ", optimal" : ""
      }).${leftOut ? ` ${leftOut} stop(s) left out: no road joins them with the start.` : ""}`, leftOut ? "notice" : undefined);
    } catch (error) {
      failAt(error, Object.fromEntries(state.stops.map((stop, n) => [`stops[${n}]`, stop])));
    }
  });

  $("matrix-button").addEventListener("click", async () => {
    busy("Computing the matrix…");
    try {
      const answer = await api("POST", "/v1/matrix", {
        body: { sources: state.stops.map((s) => ({ lat: s.lat, lon: s.lon })), ...profile(), departureTime: departure() },
      });
      const table = element("table");
      const head = element("tr");
      head.append(element("th", "from \\ to"), ...state.stops.map((_, j) => element("th", String(j + 1))));
      table.append(head);
      answer.durations.forEach((row, i) => {
        const line = element("tr");
        line.append(element("th", String(i + 1)));
        row.forEach((duration, j) => {
          const distance = answer.distances ? answer.distances[i][j] : null;
          line.append(element("td", duration === null ? "–" : `${seconds(duration)}${distance === null ? "" : ` · ${metres(distance)}`}`));
        });
        table.append(line);
      });
      $("matrix").replaceChildren(element("p", "Driving time and distance between the stops:"), table);
      status(`Matrix of ${answer.durations.length} × ${answer.durations.length} (${answer.provider}).`);
    } catch (error) {
      fail(error);
    }
  });

  // ---- isochrones ---------------------------------------------------------------------------
  const MAX_ISOCHRONE_MINUTES = 60;
  async function isochrone(point) {
    // Checked here in minutes, the field's unit (the API's limit is 3600 seconds: 60 minutes).
    const minutes = $("isochrone-minutes").value.split(",").map((x) => Number(x.trim()));
    if (!minutes.length || minutes.length > 4 || minutes.some((m) => !(m > 0 && m <= MAX_ISOCHRONE_MINUTES))) {
      notice(`Give 1 to 4 numbers of minutes above 0 and at most ${MAX_ISOCHRONE_MINUTES}, comma-separated.`);
      return;
    }
    busy("Computing the reachable area…");
    try {
      const answer = await api("GET", "/v1/isochrone", {
        query: { point: latLon(point), time: minutes.map((m) => Math.round(m * 60)).join(","), ...profile(), departureTime: departure() },
      });
      layers.isochrone.clearLayers();
      const features = [...answer.features].reverse(); // the largest first, the smaller on top
      features.forEach((feature, i) => {
        const colour = ISOCHRONE_COLOURS[Math.min(features.length - 1 - i, ISOCHRONE_COLOURS.length - 1)];
        L.geoJSON(feature, {
          interactive: false,
          className: "isochrone",
          style: { color: colour, weight: 1, fillOpacity: 0.18 },
        }).addTo(layers.isochrone);
      });
      L.circleMarker([point.lat, point.lon], { radius: 6, color: "#000", className: "isochrone-centre", interactive: false })
        .addTo(layers.isochrone);
      const ended = answer.features.filter((feature) => feature.properties.mapEndReached);
      const cut = answer.features.filter((feature) => feature.properties.mapEdgeReached);
      const endNote = ended.length
        ? ` The loaded map's roads end within ${ended[0].properties.time / 60} min: larger areas are the same.`
        : cut.length
          ? ` From ${cut[0].properties.time / 60} min the area reaches the edge of the loaded map and is cut there.`
          : "";
      $("isochrone-text").textContent = `Within ${minutes.join(", ")} min of ${shown(point)} (${answer.provider}).${endNote}`;
      status(`Reachable areas drawn.${endNote}`, ended.length || cut.length ? "notice" : undefined);
    } catch (error) {
      fail(error);
    }
  }
})();
