// What both explorer pages (app.js, models.js) build their elements with; loaded before them.
"use strict";

const $ = (id) => document.getElementById(id);

// An element: attributes (class, text, on<event> handlers, the rest as attributes; null,
// undefined and false left out) and children (nodes, or values shown as text).
function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "class") e.className = v;
    else if (k === "text") e.textContent = v;
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? "" : v);
  }
  for (const c of kids.flat()) {
    if (c === null || c === undefined) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}
