// Small DOM builders shared by the pages (/map, /console): text goes in as text, never as HTML.
"use strict";

window.PageDom = (function () {
  function element(tag, text, className) {
    const node = document.createElement(tag);
    if (text !== undefined && text !== null) node.textContent = text;
    if (className) node.className = className;
    return node;
  }
  function button(text, onClick, className) {
    const node = element("button", text, className);
    node.type = "button";
    node.addEventListener("click", onClick);
    return node;
  }
  return { element, button };
})();
