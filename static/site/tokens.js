/* The tokens page: copy the new token to the clipboard, and confirm before revoking one
   (with the site's dialog; a revoked token stops working at once and cannot be restored). */
(() => {
  "use strict";

  const copyButton = document.getElementById("copy-token");
  if (copyButton) {
    const field = document.getElementById(copyButton.dataset.copyTarget);
    const status = document.getElementById("copy-status");
    copyButton.addEventListener("click", async () => {
      let copied = false;
      try {
        await navigator.clipboard.writeText(field.value);
        copied = true;
      } catch (_) {
        // No clipboard API (plain http on a LAN address): select it for Ctrl+C instead.
        field.focus();
        field.select();
        try { copied = document.execCommand("copy"); } catch (__) { copied = false; }
      }
      status.textContent = copied ? "Copied to the clipboard." : "Selected: press Ctrl+C (⌘C) to copy.";
    });
  }

  for (const form of document.querySelectorAll("form[data-confirm-revoke]")) {
    form.addEventListener("submit", async (ev) => {
      if (form.dataset.confirmed === "1") return;
      ev.preventDefault();
      const ok = await window.dfUI.confirm({
        title: `Revoke “${form.dataset.confirmRevoke}”?`,
        message: "Scripts using this token stop working at once. This cannot be undone.",
        confirmLabel: "Revoke", danger: true,
      });
      if (!ok) return;
      form.dataset.confirmed = "1";
      form.requestSubmit ? form.requestSubmit() : form.submit();
    });
  }
})();
