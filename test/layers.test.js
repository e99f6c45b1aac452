/**
 * The layers of docs/ARCHITECTURE.md hold in the code: every relative import under src/ goes to the
 * same folder, a folder listed before it, or a leaf file (errors.ts, version.ts, ...; a leaf only to
 * leaves listed before it); every folder is
 * listed; and no module reaches itself through its imports (type-only imports included).
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";
const ROOT = resolve(import.meta.dirname, "..");
const SRC = join(ROOT, "src");
/** The layer list: `src/<folder>/` and `src/<file>.ts` lines of the first code block, lowest first. */
function layers() {
    const doc = readFileSync(join(ROOT, "docs/ARCHITECTURE.md"), "utf8");
    const block = /```\n([\s\S]*?)```/.exec(doc)[1];
    const folders = [];
    const leaves = [];
    for (const m of block.matchAll(/^src\/([a-z-]+)(\/|\.ts)\s/gm))
        (m[2] === "/" ? folders : leaves).push(m[1]);
    return { folders, leaves };
}
function sourceFiles(dir) {
    return readdirSync(dir).flatMap((f) => {
        const p = join(dir, f);
        return statSync(p).isDirectory() ? sourceFiles(p) : p.endsWith(".ts") ? [p] : [];
    });
}
/** file -> the src files it imports (static, dynamic and re-exports; type-only ones too). */
function importGraph() {
    const graph = new Map();
    for (const file of sourceFiles(SRC)) {
        const text = readFileSync(file, "utf8");
        const targets = [...text.matchAll(/\b(?:from|import)\s*\(?\s*["'](\.{1,2}\/[^"']+)["']/g)].map((m) => relative(SRC, resolve(dirname(file), m[1])).replace(/\.js$/, ".ts"));
        graph.set(relative(SRC, file), targets);
    }
    return graph;
}
/** The layer a src-relative path belongs to: its first folder, or its file name for a top-level file. */
const layerOf = (path) => (path.includes("/") ? path.split("/")[0] : path.replace(/\.ts$/, ""));
/** Strongly connected components with more than one file (Tarjan). */
function cycles(graph) {
    let counter = 0;
    const index = new Map();
    const low = new Map();
    const stack = [];
    const onStack = new Set();
    const out = [];
    const visit = (v) => {
        index.set(v, counter);
        low.set(v, counter++);
        stack.push(v);
        onStack.add(v);
        for (const w of graph.get(v) ?? []) {
            if (!graph.has(w))
                continue;
            if (!index.has(w)) {
                visit(w);
                low.set(v, Math.min(low.get(v), low.get(w)));
            }
            else if (onStack.has(w))
                low.set(v, Math.min(low.get(v), index.get(w)));
        }
        if (low.get(v) === index.get(v)) {
            const scc = [];
            let w;
            do {
                w = stack.pop();
                onStack.delete(w);
                scc.push(w);
            } while (w !== v);
            if (scc.length > 1)
                out.push(scc.sort());
        }
    };
    for (const v of graph.keys())
        if (!index.has(v))
            visit(v);
    return out;
}
describe("layers (docs/ARCHITECTURE.md)", () => {
    const { folders, leaves } = layers();
    const graph = importGraph();
    it("lists every folder and top-level file under src/", () => {
        expect(folders.length).toBeGreaterThan(10);
        const present = new Set([...graph.keys()].map(layerOf));
        expect([...present].filter((l) => !folders.includes(l) && !leaves.includes(l)).sort()).toEqual([]);
    });
    it("every import goes to the same folder, a lower layer or a leaf", () => {
        const rank = new Map(folders.map((f, i) => [f, i]));
        const upward = [];
        for (const [file, targets] of graph) {
            const from = layerOf(file);
            for (const target of targets) {
                const to = layerOf(target);
                const ok = leaves.includes(from)
                    ? leaves.indexOf(to) >= 0 && leaves.indexOf(to) < leaves.indexOf(from)
                    : leaves.includes(to) || to === from || rank.get(to) < rank.get(from);
                if (!ok)
                    upward.push(`${file} -> ${target}`);
            }
        }
        expect(upward).toEqual([]);
    });
    it("no import cycles", () => {
        expect(graph.size).toBeGreaterThan(100);
        expect(cycles(graph)).toEqual([]);
    });
});
//# sourceMappingURL=layers.test.js.map