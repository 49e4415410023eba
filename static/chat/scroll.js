/* Follow the stream unless the reader scrolled up.
 *
 * The decision is kept as state (`pinned`), not re-measured on each token: a table or a code
 * block can arrive in one render and grow the page by a screen at once, and a "near the
 * bottom?" test made after that growth would wrongly conclude the reader had left. Only the
 * reader's own scrolling changes `pinned`; growth of the content (seen by a ResizeObserver,
 * so it covers every render path, not only token handlers) keeps a pinned view at the end. */
(function () {
  "use strict";

  const SLACK = 48; // px from the end that still counts as "at the bottom"
  let box = null, button = null, pinned = true, lastTop = 0;

  function distance() { return box.scrollHeight - box.scrollTop - box.clientHeight; }

  function toEnd() {
    box.scrollTop = box.scrollHeight;
    lastTop = box.scrollTop;
    sync();
  }

  // No messages yet (the welcome screen scrolls on a phone): there is no latest to jump to.
  function sync() { if (button) button.hidden = pinned || distance() <= SLACK || !box.querySelector("article.msg"); }

  function onScroll() {
    const d = distance();
    // Moving up is the reader's doing (growth below never lowers scrollTop); reaching the end again re-pins.
    if (box.scrollTop < lastTop - 2 && d > SLACK) pinned = false;
    else if (d <= SLACK) pinned = true;
    lastTop = box.scrollTop;
    sync();
  }

  function init(conversation, content, jumpButton) {
    box = conversation;
    button = jumpButton;
    box.addEventListener("scroll", onScroll, { passive: true });
    if (button) button.addEventListener("click", () => { pinned = true; toEnd(); });
    const grew = () => { if (pinned) toEnd(); else sync(); };
    if (window.ResizeObserver) {
      const observer = new ResizeObserver(grew);
      observer.observe(content);
      observer.observe(box); // the composer growing shrinks the view
    } else {
      new MutationObserver(grew).observe(content, { childList: true, subtree: true, characterData: true });
    }
  }

  /* `force`: the reader acted (sent a message, opened a thread): go to the end and follow. */
  function follow(force) {
    if (!box) return;
    if (force) pinned = true;
    if (pinned) toEnd(); else sync();
  }

  window.DFScroll = { init, follow, pinned: () => pinned };
})();
