/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * flamegraph - draw stack samples as one self-contained interactive SVG.
 *
 * Input: folded stacks (util/fold's output) or anything util/fold reads.
 * Output (standard output): an SVG with one <g> per frame holding a <title>
 * (name, count, percentage) and a <rect> (+ a <text> label when it fits),
 * and embedded JavaScript for zoom (click a frame, "Reset Zoom") and regex
 * search ("Search", shows the matched percentage).  No network access, no
 * timestamps: the same input and options give the same bytes.
 *
 * Layout: stacks are sorted frame by frame (flame_sorted), so every frame
 * path is one contiguous run of stacks; one pass over them opens and closes
 * frames like a depth-first walk, a frame's count being the samples between
 * its opening and closing.  Pass 1 finds the deepest drawn frame (the image
 * height depends on it), pass 2 writes the frames.
 */
#include "flame.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
	"usage: flamegraph [OPTIONS] [FILE...] > graph.svg\n"
	"       flamegraph --diff [OPTIONS] BEFORE AFTER > diff.svg\n"
	"\n"
	"Draw folded stacks ('FRAME;...;FRAME COUNT' lines, as util/fold writes them,\n"
	"or any input util/fold reads) as an interactive SVG flame graph on standard\n"
	"output.  FILEs ('-' or none: standard input) are merged.\n"
	"\n"
	"Options:\n"
	"  --title TEXT       title (default 'Flame Graph', 'Icicle Graph' with\n"
	"                     --inverted, 'Differential Flame Graph' with --diff)\n"
	"  --subtitle TEXT    second line under the title (default: none)\n"
	"  --width PX         image width (default 1200)\n"
	"  --height PX        height of one frame (default 16)\n"
	"  --minwidth W       omit frames narrower than W pixels, or W% of all\n"
	"                     samples with a '%' suffix (default 0.1)\n"
	"  --countname NAME   what a count counts, in tooltips (default 'samples')\n"
	"  --inverted         icicle graph: root at the top, stacks grow down\n"
	"  --reverse          reverse each stack first (leaf becomes root), merging\n"
	"                     the callers of each leaf\n"
	"  --diff             differential graph of two profiles: widths from AFTER,\n"
	"                     color by change from BEFORE (red: more samples,\n"
	"                     blue: fewer, white: same)\n"
	"  --normalize        with --diff, scale BEFORE's counts to AFTER's total first\n"
	"  -h, --help         this text;  --version  the version\n"
	"\n"
	"Colors tell frame kinds apart: green Lua function ('chunk:name', main chunk),\n"
	"aqua Lua line ('chunk:123'), purple JIT trace ('trace#N:...'), orange native\n"
	"code ('C:...', 'sym+0x...'), yellow fast function ('builtin...'); the shade\n"
	"varies with the name (the same name always gets the same color).\n"
	"In the SVG: click a frame to zoom in, 'Reset Zoom' to zoom out, 'Search'\n"
	"(or Ctrl-F) to highlight frames matching a JavaScript regular expression\n"
	"and show their share of all samples; hover for a frame's numbers.\n"
	"\n"
	"Exit status: 0 ok, 1 bad input (the error names FILE:LINE), 2 usage.\n";

#define XPAD 10
#define FONT 12
#define CHARW (FONT * 0.6)	/* monospace advance, in pixels */

struct opts {
	const char *title, *subtitle, *countname;
	long width, height;
	double minwidth;
	int minwidth_pct, inverted, reverse, diff, normalize;
};

/* One open frame during the walk. */
struct node {
	const char *name;
	size_t len;
	uint64_t start;		/* samples before this frame */
	double dstart;		/* cumulative delta before this frame (--diff) */
};

struct graph {
	const struct opts *o;
	FILE *out;
	struct flame_stack **v;
	size_t n;
	const struct flame_table *before;
	double before_scale;	/* --normalize factor */
	uint64_t total;
	double xscale, minpx;
	int ypad1, ypad2;
	long imgheight;
	size_t maxdepth;	/* deepest drawn frame (root "all" = 0) */
	double maxdelta;	/* largest |delta| of a drawn frame */
	/* walk state */
	struct node *stack;
	size_t cap;
	uint64_t offset;
	double dsum;
	int emit;
};

/* ---- text ------------------------------------------------------------ */

/* Length of the valid UTF-8 sequence at S (at most N bytes), 0 if invalid
 * or not allowed in XML 1.0. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	uint32_t c;
	size_t len, i;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		len = 2, c = s[0] & 0x1f;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		len = 3, c = s[0] & 0x0f;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		len = 4, c = s[0] & 0x07;
	else
		return 0;
	if (n < len)
		return 0;
	for (i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		c = (c << 6) | (s[i] & 0x3f);
	}
	if ((len == 3 && c < 0x800) || (len == 4 && (c < 0x10000 || c > 0x10ffff)) ||
	    (c >= 0xd800 && c <= 0xdfff) || c == 0xfffe || c == 0xffff)
		return 0;
	return len;
}

/* Characters S shows as (invalid bytes show as \xNN: 4 characters). */
static size_t display_chars(const char *s, size_t n)
{
	size_t i = 0, chars = 0, l;

	while (i < n) {
		l = utf8_len((const unsigned char *)s + i, n - i);
		chars += l ? 1 : 4;
		i += l ? l : 1;
	}
	return chars;
}

/* Write at most MAXCHARS display characters of S as XML text. */
static void xml_text(FILE *out, const char *s, size_t n, size_t maxchars)
{
	size_t i = 0, chars = 0, l;

	while (i < n && chars < maxchars) {
		unsigned char c = (unsigned char)s[i];
		l = utf8_len((const unsigned char *)s + i, n - i);
		/* control bytes are not allowed in XML 1.0 text: shown as \xNN
		 * like invalid UTF-8 (frames never have them: fold rejects
		 * them; --title and friends may) */
		if (!l || (c < 0x20 && c != '\t') || c == 0x7f) {
			if (chars + 4 > maxchars)
				break;
			fprintf(out, "\\x%02x", c);
			chars += 4;
			i++;
			continue;
		}
		if (c == '&')
			fputs("&amp;", out);
		else if (c == '<')
			fputs("&lt;", out);
		else if (c == '>')
			fputs("&gt;", out);
		else
			fwrite(s + i, 1, l, out);
		chars++;
		i += l;
	}
}

/* "1,234,567" */
static const char *commas(uint64_t v, char *buf)
{
	char tmp[32];
	int n = snprintf(tmp, sizeof tmp, "%" PRIu64, v), i, o = 0;

	for (i = 0; i < n; i++) {
		if (i && (n - i) % 3 == 0)
			buf[o++] = ',';
		buf[o++] = tmp[i];
	}
	buf[o] = '\0';
	return buf;
}

/* ---- colors ---------------------------------------------------------- */

enum kind { K_ROOT, K_LUAFUNC, K_LUALINE, K_TRACE, K_C, K_BUILTIN };

static enum kind frame_kind(const char *s, size_t n)
{
	size_t i;

	if (n >= 6 && !memcmp(s, "trace#", 6))
		return K_TRACE;
	if (n >= 2 && !memcmp(s, "C:", 2))
		return K_C;
	if (n >= 7 && !memcmp(s, "builtin", 7))
		return K_BUILTIN;
	for (i = n; i > 0 && s[i - 1] >= '0' && s[i - 1] <= '9'; i--)
		;
	if (i < n && i >= 2 && s[i - 1] == ':')
		return K_LUALINE;
	for (i = 0; i + 3 <= n; i++)
		if (s[i] == '+' && s[i + 1] == '0' && s[i + 2] == 'x')
			return K_C;
	return K_LUAFUNC;
}

static uint32_t name_hash(const char *s, size_t n)
{
	uint32_t h = 2166136261u;
	size_t i;

	for (i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 16777619u;
	h ^= h >> 15;
	h *= 0x2c1b3c6du;
	h ^= h >> 12;
	return h;
}

static void kind_color(char *buf, size_t size, enum kind k, const char *s, size_t n)
{
	/* base and range for r, g, b per kind */
	static const int pal[][6] = {
		[K_ROOT]    = {200, 0, 200, 0, 200, 0},
		[K_LUAFUNC] = {70, 70, 180, 50, 60, 40},
		[K_LUALINE] = {70, 50, 190, 40, 200, 45},
		[K_TRACE]   = {170, 50, 110, 50, 220, 35},
		[K_C]       = {225, 30, 90, 90, 40, 40},
		[K_BUILTIN] = {215, 40, 195, 40, 50, 50},
	};
	uint32_t h = name_hash(s, n);
	const int *p = pal[k];
	int r = p[0] + (int)((h & 0xff) * p[1] / 255);
	int g = p[2] + (int)(((h >> 8) & 0xff) * p[3] / 255);
	int b = p[4] + (int)(((h >> 16) & 0xff) * p[5] / 255);

	snprintf(buf, size, "rgb(%d,%d,%d)", r, g, b);
}

static void diff_color(char *buf, size_t size, double delta, double maxdelta)
{
	int v = maxdelta > 0 ? (int)lround(210 * fabs(delta) / maxdelta) : 0;

	if (delta > 0)
		snprintf(buf, size, "rgb(255,%d,%d)", 255 - v, 255 - v);
	else if (delta < 0)
		snprintf(buf, size, "rgb(%d,%d,255)", 255 - v, 255 - v);
	else
		snprintf(buf, size, "rgb(255,255,255)");
}

/* ---- the walk -------------------------------------------------------- */

static double round2(double x)
{
	return round(x * 100) / 100;
}

/* Frame NODE at DEPTH closed with COUNT samples and DELTA change. */
static void frame(struct graph *g, const struct node *nd, size_t depth, uint64_t count,
		  double delta)
{
	const struct opts *o = g->o;
	double x = round2(XPAD + nd->start * g->xscale);
	double w = round2(XPAD + (nd->start + count) * g->xscale) - x;
	double y;
	char fill[40], c1[32];
	size_t chars, fit;

	if (w <= 0 || (double)count * g->xscale < g->minpx)
		return;
	if (!g->emit) {
		if (depth > g->maxdepth)
			g->maxdepth = depth;
		if (fabs(delta) > g->maxdelta)
			g->maxdelta = fabs(delta);
		return;
	}
	if (o->inverted)
		y = g->ypad1 + (double)depth * o->height;
	else
		y = (double)g->imgheight - g->ypad2 - (double)(depth + 1) * o->height;
	if (o->diff)
		diff_color(fill, sizeof fill, delta, g->maxdelta);
	else
		kind_color(fill, sizeof fill, depth ? frame_kind(nd->name, nd->len) : K_ROOT,
			   nd->name, nd->len);

	fputs("<g><title>", g->out);
	xml_text(g->out, nd->name, nd->len, SIZE_MAX);
	fprintf(g->out, " (%s ", commas(count, c1));
	xml_text(g->out, o->countname, strlen(o->countname), SIZE_MAX);
	fprintf(g->out, ", %.2f%%", 100.0 * (double)count / (double)g->total);
	if (o->diff) {
		double before = (double)count - delta;
		fprintf(g->out, o->normalize ? "; before %.1f, change %+.1f" :
			"; before %.0f, change %+.0f", before, delta);
		if (before > 0)
			fprintf(g->out, " (%+.1f%%)", 100.0 * delta / before);
		else
			fputs(" (new)", g->out);
	}
	fprintf(g->out, ")</title><rect x=\"%.2f\" y=\"%.0f\" width=\"%.2f\" height=\"%ld\""
		" fill=\"%s\" rx=\"2\" ry=\"2\"/>", x, y, w, o->height - 1, fill);
	/* Label: as many characters as fit, ".." when cut. */
	fit = w > 6 ? (size_t)((w - 6) / CHARW) : 0;
	if (fit >= 3) {
		fprintf(g->out, "<text x=\"%.2f\" y=\"%.1f\">", x + 3,
			y + o->height / 2.0 + FONT * 0.35);
		chars = display_chars(nd->name, nd->len);
		if (chars <= fit) {
			xml_text(g->out, nd->name, nd->len, SIZE_MAX);
		} else {
			xml_text(g->out, nd->name, nd->len, fit - 2);
			fputs("..", g->out);
		}
		fputs("</text>", g->out);
	}
	fputs("</g>\n", g->out);
}

static void close_to(struct graph *g, size_t depth, size_t *open)
{
	while (*open > depth) {
		struct node *nd = &g->stack[*open - 1];
		frame(g, nd, *open - 1, g->offset - nd->start, g->dsum - nd->dstart);
		(*open)--;
	}
}

static void open_node(struct graph *g, size_t *open, const char *name, size_t len)
{
	struct node *nd;

	if (*open == g->cap) {
		g->cap = g->cap ? g->cap * 2 : 64;
		g->stack = xrealloc(g->stack, g->cap * sizeof *g->stack);
	}
	nd = &g->stack[(*open)++];
	nd->name = name;
	nd->len = len;
	nd->start = g->offset;
	nd->dstart = g->dsum;
}

static void walk(struct graph *g)
{
	size_t i, open = 0;
	const char *prev = "";

	g->offset = 0;
	g->dsum = 0;
	open_node(g, &open, "all", 3);
	for (i = 0; i < g->n; i++) {
		const char *k = g->v[i]->key, *p, *e, *f;
		size_t common = 1, j = 0;

		/* Frames shared with the previous stack: up to the last
		 * separator before the first difference, or through it when
		 * the difference is that one stack ends there. */
		f = k;
		while (k[j] && k[j] == prev[j]) {
			if (k[j] == FLAME_SEP) {
				common++;
				f = k + j + 1;
			}
			j++;
		}
		if ((k[j] == FLAME_SEP || !k[j]) && (prev[j] == FLAME_SEP || !prev[j]) && j) {
			common++;
			f = k[j] ? k + j + 1 : k + j;
		}
		close_to(g, common, &open);
		/* Open the rest of this stack's frames. */
		for (p = f; *p; p = e + 1) {
			e = strchr(p, FLAME_SEP);
			if (!e)
				e = p + strlen(p);
			open_node(g, &open, p, (size_t)(e - p));
			if (!*e)
				break;
		}
		/* A stack that is a prefix of the next one ends at a frame
		 * that stays open: its samples count for that frame. */
		g->offset += g->v[i]->count;
		if (g->before) {
			const struct flame_stack *b = flame_find(g->before, g->v[i]->key,
								 g->v[i]->len);
			double bc = b ? (double)b->count * g->before_scale : 0;
			g->dsum += (double)g->v[i]->count - bc;
		}
		prev = k;
	}
	close_to(g, 0, &open);
}

/* ---- the SVG --------------------------------------------------------- */

static const char script[] =
	"\"use strict\";\n"
	"var frames = [], byEl, details, unzoomBtn, searchBtn, matchedTxt, total = 0,\n"
	"    zoomed = null, searching = null, origFill = {}, EPS = 1e-6;\n"
	"function label(name, w) {\n"
	"  var fit = Math.floor((w - 6) / cfg.charw);\n"
	"  if (fit < 3) return \"\";\n"
	"  return name.length <= fit ? name : name.substring(0, fit - 2) + \"..\";\n"
	"}\n"
	"function init() {\n"
	"  details = document.getElementById(\"details\").firstChild;\n"
	"  unzoomBtn = document.getElementById(\"unzoom\");\n"
	"  searchBtn = document.getElementById(\"search\");\n"
	"  matchedTxt = document.getElementById(\"matched\");\n"
	"  var gs = document.getElementById(\"frames\").getElementsByTagName(\"g\");\n"
	"  for (var i = 0; i < gs.length; i++) {\n"
	"    var g = gs[i], r = g.getElementsByTagName(\"rect\")[0];\n"
	"    var t = g.getElementsByTagName(\"text\")[0] || null;\n"
	"    var title = g.getElementsByTagName(\"title\")[0].textContent;\n"
	"    var k = title.lastIndexOf(\" (\");\n"
	"    var f = { g: g, r: r, t: t, name: title.substring(0, k), info: title,\n"
	"      n: parseInt(title.substring(k + 2).replace(/,/g, \"\"), 10),\n"
	"      x: parseFloat(r.getAttribute(\"x\")), w: parseFloat(r.getAttribute(\"width\")),\n"
	"      y: parseFloat(r.getAttribute(\"y\")), fill: r.getAttribute(\"fill\"),\n"
	"      label: t ? t.textContent : \"\" };\n"
	"    g.frameIndex = i;\n"
	"    frames.push(f);\n"
	"    if (f.n > total) total = f.n;\n"
	"  }\n"
	"  var box = document.getElementById(\"frames\");\n"
	"  box.addEventListener(\"click\", function (e) {\n"
	"    var f = frameOf(e.target);\n"
	"    if (f) zoom(f);\n"
	"  });\n"
	"  box.addEventListener(\"mouseover\", function (e) {\n"
	"    var f = frameOf(e.target);\n"
	"    if (f) details.nodeValue = f.info;\n"
	"  });\n"
	"  box.addEventListener(\"mouseout\", function () { details.nodeValue = \" \"; });\n"
	"  unzoomBtn.addEventListener(\"click\", unzoom);\n"
	"  searchBtn.addEventListener(\"click\", function () {\n"
	"    if (searching !== null) resetSearch(); else searchPrompt();\n"
	"  });\n"
	"  window.addEventListener(\"keydown\", function (e) {\n"
	"    if ((e.ctrlKey || e.metaKey) && (e.key === \"f\" || e.key === \"F\")) {\n"
	"      e.preventDefault();\n"
	"      searchPrompt();\n"
	"    } else if (e.key === \"Escape\") {\n"
	"      resetSearch();\n"
	"      unzoom();\n"
	"    }\n"
	"  });\n"
	"}\n"
	"function frameOf(el) {\n"
	"  while (el && el.frameIndex === undefined) el = el.parentNode;\n"
	"  return el ? frames[el.frameIndex] : null;\n"
	"}\n"
	"function place(f, x, w) {\n"
	"  f.r.setAttribute(\"x\", x.toFixed(2));\n"
	"  f.r.setAttribute(\"width\", w.toFixed(2));\n"
	"  if (f.t) {\n"
	"    f.t.setAttribute(\"x\", (x + 3).toFixed(2));\n"
	"    f.t.textContent = label(f.name, w);\n"
	"  }\n"
	"}\n"
	"function isAncestor(a, f) {\n"
	"  return cfg.inverted ? a.y < f.y : a.y > f.y;\n"
	"}\n"
	"function zoom(z) {\n"
	"  var scale = cfg.fullw / z.w;\n"
	"  zoomed = z;\n"
	"  unzoomBtn.classList.remove(\"hide\");\n"
	"  for (var i = 0; i < frames.length; i++) {\n"
	"    var f = frames[i];\n"
	"    var overlaps = f.x < z.x + z.w - EPS && f.x + f.w > z.x + EPS;\n"
	"    f.g.classList.remove(\"parent\");\n"
	"    if (!overlaps) {\n"
	"      f.g.classList.add(\"hide\");\n"
	"    } else if (f !== z && isAncestor(f, z)) {\n"
	"      f.g.classList.remove(\"hide\");\n"
	"      f.g.classList.add(\"parent\");\n"
	"      place(f, cfg.xpad, cfg.fullw);\n"
	"    } else {\n"
	"      f.g.classList.remove(\"hide\");\n"
	"      place(f, cfg.xpad + (f.x - z.x) * scale, f.w * scale);\n"
	"    }\n"
	"  }\n"
	"}\n"
	"function unzoom() {\n"
	"  zoomed = null;\n"
	"  unzoomBtn.classList.add(\"hide\");\n"
	"  for (var i = 0; i < frames.length; i++) {\n"
	"    var f = frames[i];\n"
	"    f.g.classList.remove(\"hide\");\n"
	"    f.g.classList.remove(\"parent\");\n"
	"    f.r.setAttribute(\"x\", f.x.toFixed(2));\n"
	"    f.r.setAttribute(\"width\", f.w.toFixed(2));\n"
	"    if (f.t) {\n"
	"      f.t.setAttribute(\"x\", (f.x + 3).toFixed(2));\n"
	"      f.t.textContent = f.label;\n"
	"    }\n"
	"  }\n"
	"}\n"
	"function searchPrompt() {\n"
	"  var term = window.prompt(\"Search frames (regular expression):\", searching || \"\");\n"
	"  if (term === null) return;\n"
	"  if (term === \"\") resetSearch(); else search(term);\n"
	"}\n"
	"function search(term) {\n"
	"  var re;\n"
	"  try {\n"
	"    re = new RegExp(term);\n"
	"  } catch (err) {\n"
	"    matchedTxt.textContent = \"invalid regular expression\";\n"
	"    return null;\n"
	"  }\n"
	"  searching = term;\n"
	"  searchBtn.textContent = \"Reset Search\";\n"
	"  var hits = [];\n"
	"  for (var i = 0; i < frames.length; i++) {\n"
	"    var f = frames[i];\n"
	"    if (re.test(f.name)) {\n"
	"      f.r.setAttribute(\"fill\", cfg.hitcolor);\n"
	"      hits.push(f);\n"
	"    } else {\n"
	"      f.r.setAttribute(\"fill\", f.fill);\n"
	"    }\n"
	"  }\n"
	"  // Count each matched sample once: skip matches inside a counted match.\n"
	"  hits.sort(function (a, b) { return a.x - b.x || b.w - a.w; });\n"
	"  var sum = 0, end = -1;\n"
	"  for (var j = 0; j < hits.length; j++) {\n"
	"    if (hits[j].x >= end - EPS) {\n"
	"      sum += hits[j].n;\n"
	"      end = hits[j].x + hits[j].w;\n"
	"    }\n"
	"  }\n"
	"  var pct = total ? 100 * sum / total : 0;\n"
	"  matchedTxt.textContent = \"Matched: \" + pct.toFixed(2) + \"%\";\n"
	"  return pct;\n"
	"}\n"
	"function resetSearch() {\n"
	"  searching = null;\n"
	"  searchBtn.textContent = \"Search\";\n"
	"  matchedTxt.textContent = \" \";\n"
	"  for (var i = 0; i < frames.length; i++)\n"
	"    frames[i].r.setAttribute(\"fill\", frames[i].fill);\n"
	"}\n";

static void write_svg(struct graph *g)
{
	const struct opts *o = g->o;
	long w = o->width, h = g->imgheight;
	const char *title = o->title;

	if (!title)
		title = o->diff ? "Differential Flame Graph" :
			o->inverted ? "Icicle Graph" : "Flame Graph";
	fprintf(g->out,
		"<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"
		"<svg version=\"1.1\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%ld\""
		" height=\"%ld\" viewBox=\"0 0 %ld %ld\" onload=\"init()\">\n"
		"<!-- Drawn by stap++ flamegraph %s. Click a frame to zoom in,"
		" 'Reset Zoom' to zoom out, 'Search' for a regular expression. -->\n",
		w, h, w, h, STAPXX_VERSION);
	fputs("<style type=\"text/css\">\n"
	      "text { font-family: 'DejaVu Sans Mono', Menlo, Consolas, monospace;"
	      " font-size: 12px; fill: #000; }\n"
	      "#title { font-size: 17px; text-anchor: middle; }\n"
	      "#subtitle { text-anchor: middle; fill: #444; }\n"
	      "#matched, #search { text-anchor: end; }\n"
	      ".btn { cursor: pointer; fill: #224; }\n"
	      ".btn:hover { text-decoration: underline; }\n"
	      ".hide { display: none; }\n"
	      ".parent { opacity: 0.5; }\n"
	      "#frames g { cursor: pointer; }\n"
	      "#frames g:hover rect { stroke: #000; stroke-width: 0.5; }\n"
	      "#frames text { pointer-events: none; }\n"
	      "</style>\n", g->out);
	fprintf(g->out,
		"<script type=\"text/ecmascript\"><![CDATA[\n"
		"var cfg = { xpad: %d, fullw: %ld, charw: %.2f, inverted: %s,"
		" hitcolor: \"rgb(230,0,230)\" };\n%s]]></script>\n",
		XPAD, w - 2 * XPAD, CHARW, o->inverted ? "true" : "false", script);
	fprintf(g->out,
		"<defs><linearGradient id=\"background\" x1=\"0\" y1=\"0\" x2=\"0\" y2=\"1\">"
		"<stop stop-color=\"#eeeeee\" offset=\"5%%\"/>"
		"<stop stop-color=\"%s\" offset=\"95%%\"/></linearGradient></defs>\n"
		"<rect x=\"0\" y=\"0\" width=\"%ld\" height=\"%ld\" fill=\"url(#background)\"/>\n",
		o->diff ? "#e0e0ee" : "#eeeeb0", w, h);
	fprintf(g->out, "<text id=\"title\" x=\"%.1f\" y=\"%d\">", w / 2.0, FONT * 2);
	xml_text(g->out, title, strlen(title), SIZE_MAX);
	fputs("</text>\n", g->out);
	if (o->subtitle) {
		fprintf(g->out, "<text id=\"subtitle\" x=\"%.1f\" y=\"%d\">", w / 2.0, FONT * 4);
		xml_text(g->out, o->subtitle, strlen(o->subtitle), SIZE_MAX);
		fputs("</text>\n", g->out);
	}
	fprintf(g->out,
		"<text id=\"unzoom\" class=\"btn hide\" x=\"%d\" y=\"%d\">Reset Zoom</text>\n"
		"<text id=\"search\" class=\"btn\" x=\"%ld\" y=\"%d\">Search</text>\n"
		"<text id=\"details\" x=\"%d\" y=\"%ld\"> </text>\n"
		"<text id=\"matched\" x=\"%ld\" y=\"%ld\"> </text>\n"
		"<g id=\"frames\">\n",
		XPAD, FONT * 2, w - XPAD, FONT * 2, XPAD, h - FONT, w - XPAD, h - FONT);
	g->emit = 1;
	walk(g);
	fputs("</g>\n</svg>\n", g->out);
}

/* ---- options --------------------------------------------------------- */

static long parse_long(const char *opt, const char *s, long min, long max)
{
	char *end;
	long v = strtol(s, &end, 10);

	if (!*s || *end || v < min || v > max)
		usage_die("%s '%s' is not a number from %ld to %ld", opt, s, min, max);
	return v;
}

int main(int argc, char **argv)
{
	struct opts o = { .countname = "samples", .width = 1200, .height = 16,
			  .minwidth = 0.1 };
	struct flame_table after = {0}, before = {0};
	struct graph g = {0};
	const char **files = xcalloc((size_t)argc + 1, sizeof *files);
	size_t nfiles = 0, i;
	int opts = 1;
	static char outbuf[1 << 16];

	set_program_name("flamegraph");
	for (i = 1; i < (size_t)argc; i++) {
		const char *a = argv[i], *val = NULL, *eq;
		char name[32];
		static const char *const with_value[] = {
			"--title", "--subtitle", "--width", "--height", "--minwidth",
			"--countname", NULL };
		size_t k;

		if (!opts || a[0] != '-' || !a[1]) {
			files[nfiles++] = a;
			continue;
		}
		if (!strcmp(a, "--")) {
			opts = 0;
			continue;
		}
		/* --opt=value or --opt value */
		eq = strchr(a, '=');
		snprintf(name, sizeof name, "%.*s", eq ? (int)(eq - a) : (int)strlen(a), a);
		for (k = 0; with_value[k] && strcmp(with_value[k], name); k++)
			;
		if (with_value[k]) {
			if (eq)
				val = eq + 1;
			else if (i + 1 < (size_t)argc)
				val = argv[++i];
			else
				usage_die("option '%s' needs a value", name);
		} else if (eq) {
			usage_die("option '%s' takes no value", name);
		}
		if (!strcmp(name, "-h") || !strcmp(name, "--help")) {
			fputs(usage, stdout);
			return 0;
		} else if (!strcmp(name, "--version")) {
			printf("flamegraph (stap++) %s\n", STAPXX_VERSION);
			return 0;
		} else if (!strcmp(name, "--title")) {
			o.title = val;
		} else if (!strcmp(name, "--subtitle")) {
			o.subtitle = val;
		} else if (!strcmp(name, "--countname")) {
			o.countname = val;
		} else if (!strcmp(name, "--width")) {
			o.width = parse_long(name, val, 100, 1000000);
		} else if (!strcmp(name, "--height")) {
			o.height = parse_long(name, val, 4, 1000);
		} else if (!strcmp(name, "--minwidth")) {
			char *end;
			o.minwidth = strtod(val, &end);
			if (*end == '%' && end > val) {
				o.minwidth_pct = 1;
				end++;
			}
			if (!*val || *end || !(o.minwidth >= 0) || o.minwidth > 1e9 ||
			    (o.minwidth_pct && o.minwidth > 100))
				usage_die("--minwidth '%s' is not a width in pixels"
						" (0.1) or a percentage (0.5%%)", val);
		} else if (!strcmp(name, "--inverted")) {
			o.inverted = 1;
		} else if (!strcmp(name, "--reverse")) {
			o.reverse = 1;
		} else if (!strcmp(name, "--diff")) {
			o.diff = 1;
		} else if (!strcmp(name, "--normalize")) {
			o.normalize = 1;
		} else {
			usage_die("unknown option '%s'", a);
		}
	}
	if (o.normalize && !o.diff)
		usage_die("--normalize only applies to --diff");
	if (o.diff && nfiles != 2)
		usage_die("--diff needs two files, BEFORE and AFTER (got %zu)", nfiles);

	if (o.diff) {
		flame_read(&before, files[0]);
		flame_read(&after, files[1]);
	} else if (!nfiles) {
		flame_read(&after, "-");
	} else {
		for (i = 0; i < nfiles; i++)
			flame_read(&after, files[i]);
	}
	free(files);
	if (o.reverse) {
		flame_reverse(&after);
		if (o.diff)
			flame_reverse(&before);
	}
	if (!after.total)
		die("all sample counts are zero: nothing to draw");
	if (o.diff) {
		/* Stacks only in BEFORE still change their callers' deltas. */
		for (i = 0; i < before.n; i++)
			flame_add(&after, before.items[i].key, before.items[i].len, 0);
		g.before = &before;
		g.before_scale = o.normalize && before.total ?
			(double)after.total / (double)before.total : 1.0;
	}

	g.o = &o;
	g.out = stdout;
	setvbuf(stdout, outbuf, _IOFBF, sizeof outbuf);
	g.v = flame_sorted(&after, &g.n);
	g.total = after.total;
	g.xscale = (double)(o.width - 2 * XPAD) / (double)g.total;
	g.minpx = o.minwidth_pct ? o.minwidth / 100.0 * (double)(o.width - 2 * XPAD) :
		o.minwidth;
	g.ypad1 = FONT * 3 + (o.subtitle ? FONT * 2 : 0);
	g.ypad2 = FONT * 2 + 10;

	walk(&g);	/* pass 1: height and color scale */
	g.imgheight = g.ypad1 + g.ypad2 + (long)(g.maxdepth + 1) * o.height;
	write_svg(&g);	/* pass 2 */
	flame_close_output(stdout, "standard output");

	free(g.v);
	free(g.stack);
	flame_table_free(&after);
	flame_table_free(&before);
	return 0;
}
