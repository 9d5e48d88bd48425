// A small, safe Markdown renderer for the Mnemon page: headings, lists (nested by indentation),
// block quotes, fenced and indented code, rules, paragraphs; inline code, strong, emphasis and
// links. Stored text is untrusted: nothing is parsed as HTML (every node is made with
// createElement / text nodes), and only http(s) links become anchors.
//
//   MnemonMarkdown.render("# Deploy\n\nRun `make deploy`.")  -> a DocumentFragment
"use strict";

(function () {
  const FENCE = /^ {0,3}(`{3,}|~{3,})\s*([\w+-]*)\s*$/;
  const HEADING = /^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$/;
  const RULE = /^ {0,3}([-*_])(\s*\1){2,}\s*$/;
  const ITEM = /^(\s*)([-*+]|\d{1,9}[.)])\s+(.*)$/;
  const QUOTE = /^ {0,3}>\s?(.*)$/;
  const SAFE_URL = /^https?:\/\/[^\s<>"']+$/i;

  function node(tag, className, children) {
    const out = document.createElement(tag);
    if (className) out.className = className;
    for (const child of children || []) out.append(child);
    return out;
  }

  // --- inline ---------------------------------------------------------------------------

  // Ordered by precedence: a code span hides everything inside it.
  const INLINE = [
    { re: /`([^`]+)`/y, make: (m) => node("code", "", [m[1]]) },
    { re: /\*\*(?=\S)([\s\S]*?\S)\*\*/y, make: (m) => node("strong", "", inline(m[1])) },
    { re: /__(?=\S)([\s\S]*?\S)__(?!\w)/y, make: (m) => node("strong", "", inline(m[1])) },
    { re: /\*(?=[^\s*])([\s\S]*?[^\s*])\*/y, make: (m) => node("em", "", inline(m[1])) },
    { re: /_(?=[^\s_])([\s\S]*?[^\s_])_(?!\w)/y, make: (m) => node("em", "", inline(m[1])) },
    { re: /\[([^\]]*)\]\(\s*<?([^)\s>]*)>?(?:\s+"[^"]*")?\s*\)/y, make: (m) => link(m[1], m[2]) },
    { re: /<(https?:\/\/[^\s>]+)>/y, make: (m) => link(m[1], m[1]) },
    { re: /https?:\/\/[^\s<>()]*[^\s<>().,;:!?'"]/y, make: (m) => link(m[0], m[0]) },
  ];

  // A link to anything but http(s) (javascript:, data:, relative paths) stays plain text.
  function link(text, url) {
    const label = text || url;
    if (!SAFE_URL.test(url)) return document.createTextNode(text ? `${text} (${url})` : url);
    const anchor = node("a", "", label === url ? [label] : inline(label));
    anchor.href = url;
    anchor.rel = "noopener noreferrer nofollow";
    anchor.target = "_blank";
    return anchor;
  }

  function inline(text) {
    const out = [];
    let plain = "";
    let i = 0;
    // Emphasis opens only at a word boundary, so snake_case_names stay as typed.
    const opens = (at) => at === 0 || !/\w/.test(text[at - 1]) || text[at] === "`" || text[at] === "*" || text[at] === "[";
    while (i < text.length) {
      if (text[i] === "\\" && i + 1 < text.length && /[\\`*_[\]()#+\-.!<>~|]/.test(text[i + 1])) {
        plain += text[i + 1];
        i += 2;
        continue;
      }
      let matched = null;
      if (opens(i)) {
        for (const rule of INLINE) {
          rule.re.lastIndex = i;
          const m = rule.re.exec(text);
          if (m) { matched = { m, rule }; break; }
        }
      }
      if (!matched) {
        plain += text[i];
        i += 1;
        continue;
      }
      if (plain) out.push(document.createTextNode(plain));
      plain = "";
      out.push(matched.rule.make(matched.m));
      i += matched.m[0].length;
    }
    if (plain) out.push(document.createTextNode(plain));
    return out;
  }

  // --- blocks ---------------------------------------------------------------------------

  const blank = (line) => !line.trim();
  const indentOf = (line) => line.match(/^\s*/)[0].replace(/\t/g, "    ").length;

  function startsBlock(line) {
    return FENCE.test(line) || HEADING.test(line) || RULE.test(line) || ITEM.test(line) || QUOTE.test(line);
  }

  function fenced(lines, i) {
    const [, fence, lang] = lines[i].match(FENCE);
    const body = [];
    let j = i + 1;
    while (j < lines.length && !lines[j].trim().startsWith(fence)) body.push(lines[j++]);
    const code = node("code", lang ? `language-${lang}` : "", [body.join("\n")]);
    return { block: node("pre", "md-code", [code]), next: j + 1 };
  }

  function indentedCode(lines, i) {
    const body = [];
    let j = i;
    while (j < lines.length && (/^( {4}|\t)/.test(lines[j]) || (blank(lines[j]) && j + 1 < lines.length && /^( {4}|\t)/.test(lines[j + 1])))) {
      body.push(lines[j].replace(/^( {4}|\t)/, ""));
      j += 1;
    }
    return { block: node("pre", "md-code", [node("code", "", [body.join("\n")])]), next: j };
  }

  // Items at one indentation form one list; deeper lines belong to the item above them.
  function list(lines, i) {
    const first = lines[i].match(ITEM);
    const base = indentOf(first[1]);
    const ordered = /\d/.test(first[2]);
    const out = node(ordered ? "ol" : "ul", "", []);
    if (ordered && parseInt(first[2], 10) !== 1) out.start = parseInt(first[2], 10);
    let j = i;
    while (j < lines.length) {
      const m = lines[j].match(ITEM);
      if (!m || indentOf(m[1]) !== base || /\d/.test(m[2]) !== ordered) break;
      const inner = [m[3]];
      j += 1;
      while (j < lines.length && !blank(lines[j])) {
        const sub = lines[j].match(ITEM);
        if (sub && indentOf(sub[1]) <= base) break;
        if (!sub && startsBlock(lines[j]) && indentOf(lines[j]) <= base) break;
        inner.push(indentOf(lines[j]) > base ? lines[j].slice(Math.min(indentOf(lines[j]), base + 2)) : lines[j]);
        j += 1;
      }
      const li = node("li", "", []);
      li.append(...blocks(inner, true));
      out.append(li);
      if (j < lines.length && blank(lines[j]) && j + 1 < lines.length) {
        const again = lines[j + 1].match(ITEM);
        if (again && indentOf(again[1]) === base) j += 1;
      }
    }
    return { block: out, next: j };
  }

  function quote(lines, i) {
    const inner = [];
    let j = i;
    while (j < lines.length && QUOTE.test(lines[j])) inner.push(lines[j++].match(QUOTE)[1]);
    return { block: node("blockquote", "", blocks(inner, false)), next: j };
  }

  // Each line of a paragraph keeps its own line (as in chat and issue comments): stored notes
  // and resume text are written one fact per line.
  function paragraph(lines, i, tight) {
    const children = [];
    let j = i;
    while (j < lines.length && !blank(lines[j]) && (j === i || !startsBlock(lines[j]))) {
      if (j > i) children.push(document.createElement("br"));
      children.push(...inline(lines[j++].trim()));
    }
    return { block: tight ? node("span", "", children) : node("p", "", children), next: j };
  }

  function block(lines, i, tight) {
    const line = lines[i];
    if (FENCE.test(line)) return fenced(lines, i);
    const heading = line.match(HEADING);
    if (heading) {
      // Document headings sit below the page's own h2/h3.
      const level = Math.min(6, heading[1].length + 2);
      return { block: node(`h${level}`, "md-heading", inline(heading[2])), next: i + 1 };
    }
    if (RULE.test(line)) return { block: node("hr", "", []), next: i + 1 };
    if (ITEM.test(line)) return list(lines, i);
    if (QUOTE.test(line)) return quote(lines, i);
    if (/^( {4}|\t)/.test(line) && !tight) return indentedCode(lines, i);
    return paragraph(lines, i, tight);
  }

  function blocks(lines, tight) {
    const out = [];
    let i = 0;
    while (i < lines.length) {
      if (blank(lines[i])) { i += 1; continue; }
      const { block: made, next } = block(lines, i, tight);
      out.push(made);
      i = Math.max(next, i + 1);
    }
    return out;
  }

  /** Render Markdown ``text`` into a DocumentFragment of safe DOM nodes. */
  function render(text) {
    const fragment = document.createDocumentFragment();
    const lines = String(text ?? "").replace(/\r\n?/g, "\n").split("\n");
    fragment.append(...blocks(lines, false));
    return fragment;
  }

  window.MnemonMarkdown = Object.freeze({ render, inline: (text) => inline(String(text ?? "")) });
})();
