// mnemo ui: the few things HTML cannot do by itself. Every page works without this file.
"use strict";

(function () {
  const root = document.documentElement;
  const themes = ["system", "light", "dark"];

  function applyTheme(name) {
    if (name === "light" || name === "dark") root.dataset.theme = name;
    else delete root.dataset.theme;
    const button = document.getElementById("theme");
    if (button) button.textContent = "Theme: " + name;
  }

  let theme = "system";
  try { theme = localStorage.getItem("mnemo-theme") || "system"; } catch (e) { /* storage off */ }
  applyTheme(theme);

  document.addEventListener("DOMContentLoaded", function () {
    applyTheme(theme);
    const button = document.getElementById("theme");
    if (button) {
      button.addEventListener("click", function () {
        theme = themes[(themes.indexOf(theme) + 1) % themes.length];
        try { localStorage.setItem("mnemo-theme", theme); } catch (e) { /* storage off */ }
        applyTheme(theme);
      });
    }

    // A form that asks first (forget, set back).
    document.querySelectorAll("form[data-confirm]").forEach(function (form) {
      form.addEventListener("submit", function (event) {
        if (!window.confirm(form.dataset.confirm)) event.preventDefault();
      });
    });

    // Parts that take a moment (a large graph's counts, the doctor's checks) load after the page is shown.
    document.querySelectorAll("[data-src]").forEach(function (part) {
      fetch(part.dataset.src, { credentials: "same-origin" })
        .then(function (r) { return r.ok ? r.text() : Promise.reject(r.status); })
        .then(function (html) { part.innerHTML = html; })
        .catch(function () { part.innerHTML = '<p class="error">This part could not be loaded.</p>'; });
    });

    // A jump to a message (#m123) focuses it, so the keyboard continues from there.
    if (location.hash.startsWith("#m")) {
      const target = document.getElementById(location.hash.slice(1));
      if (target) target.focus();
    }
  });

  // Keys: "/" searches; "g" then a letter goes to a page (each nav link's data-key: o m r c s p v).
  let pending = false;
  document.addEventListener("keydown", function (event) {
    const typing = /^(INPUT|TEXTAREA|SELECT)$/.test(event.target.tagName) || event.target.isContentEditable;
    if (typing || event.ctrlKey || event.metaKey || event.altKey) return;
    if (event.key === "/") {
      const search = document.querySelector("[data-search]");
      if (search) { event.preventDefault(); search.focus(); search.select(); }
      return;
    }
    if (pending) {
      pending = false;
      const link = document.querySelector('nav a[data-key="' + event.key + '"]');
      if (link) { event.preventDefault(); link.click(); }
      return;
    }
    if (event.key === "g") pending = true;
  });
})();
