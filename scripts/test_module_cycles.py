#!/usr/bin/env python3
"""Tests of scripts/module-cycles on small fake crates. Run: python3 scripts/test_module_cycles.py"""

import importlib.util
import io
import os
import tempfile
import textwrap
import unittest
from importlib.machinery import SourceFileLoader

_HERE = os.path.dirname(os.path.abspath(__file__))
_loader = SourceFileLoader("module_cycles", os.path.join(_HERE, "module-cycles"))
_spec = importlib.util.spec_from_loader("module_cycles", _loader)
mc = importlib.util.module_from_spec(_spec)
_loader.exec_module(mc)


def write_tree(root, files):
    for rel, text in files.items():
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(textwrap.dedent(text).lstrip("\n"))


class CrateCase(unittest.TestCase):
    """Each test writes one library crate (src/ files) and checks its SCCs."""

    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory()
        self.dir = self._tmp.name

    def tearDown(self):
        self._tmp.cleanup()

    def check(self, files):
        write_tree(self.dir, {"src/" + k: v for k, v in files.items()})
        graph, comps, warnings = mc.check_crate(mc.Crate("t", os.path.join(self.dir, "src", "lib.rs")))
        self.assertEqual(warnings, [])
        self.graph = graph
        return comps

    def edge(self, a, b):
        """The (file relative to src/, line, text) of the first reference of edge a -> b."""
        f, line, text = self.graph.edges[(a, b)][0]
        return os.path.relpath(f, os.path.join(self.dir, "src")), line, text


class TwoModuleCycles(CrateCase):
    def test_use_crate_both_ways(self):
        comps = self.check({
            "lib.rs": "pub mod a;\npub mod b;\npub mod c;\n",
            "a.rs": "use crate::b::B;\npub struct A;\n",
            "b.rs": "use crate::a::A;\npub struct B;\n",
            "c.rs": "use crate::a::A;\n",
        })
        self.assertEqual(comps, [["a", "b"]])
        self.assertEqual(self.edge("a", "b"), ("a.rs", 1, "crate::b::B"))
        self.assertEqual(self.edge("b", "a"), ("b.rs", 1, "crate::a::A"))

    def test_inline_crate_path_in_code(self):
        comps = self.check({
            "lib.rs": "mod a;\nmod b;\n",
            "a.rs": "pub fn f() {}\n\npub fn g() {\n    crate::b::h(1);\n}\n",
            "b.rs": "pub fn h(x: u8) -> u8 {\n    let _ = crate::a::f();\n    x\n}\n",
        })
        self.assertEqual(comps, [["a", "b"]])
        self.assertEqual(self.edge("a", "b"), ("a.rs", 4, "crate::b::h"))
        self.assertEqual(self.edge("b", "a"), ("b.rs", 2, "crate::a::f"))

    def test_deepest_module_is_the_node(self):
        comps = self.check({
            "lib.rs": "pub mod routes;\npub mod channel;\n",
            "routes/mod.rs": "pub mod admin;\n",
            "routes/admin.rs": "use crate::channel::Channel;\npub fn unix_ms() -> u64 { 0 }\n",
            "channel.rs": "pub struct Channel;\nfn now() -> u64 { crate::routes::admin::unix_ms() }\n",
        })
        self.assertEqual(comps, [["channel", "routes::admin"]])
        self.assertNotIn(("channel", "routes"), self.graph.edges)

    def test_no_cycle_one_way(self):
        comps = self.check({
            "lib.rs": "pub mod routes;\npub mod domain;\npub mod state;\n",
            "routes.rs": "use crate::domain::D;\nuse crate::state::S;\n",
            "domain.rs": "use crate::state::S;\npub struct D;\n",
            "state.rs": "pub struct S;\n",
        })
        self.assertEqual(comps, [])
        self.assertEqual(
            set(self.graph.edges), {("routes", "domain"), ("routes", "state"), ("domain", "state")}
        )


class SuperAndChildren(CrateCase):
    def test_child_uses_parent_and_parent_uses_child(self):
        comps = self.check({
            "lib.rs": "pub mod seg;\n",
            "seg/mod.rs": "mod follow;\n\npub fn emit() {}\n\nfn run() {\n    follow::go();\n}\n",
            "seg/follow.rs": "use super::emit;\n\npub fn go() {\n    super::emit();\n}\n",
        })
        self.assertEqual(comps, [["seg", "seg::follow"]])
        self.assertEqual(self.edge("seg", "seg::follow"), ("seg/mod.rs", 6, "follow::go"))
        self.assertEqual(self.edge("seg::follow", "seg"), ("seg/follow.rs", 1, "super::emit"))

    def test_child_uses_parent_only_is_no_cycle(self):
        comps = self.check({
            "lib.rs": "pub mod seg;\n",
            "seg/mod.rs": "pub mod follow;\n\npub fn emit() {}\n",
            "seg/follow.rs": "use super::*;\n\npub fn go() {\n    super::emit();\n}\n",
        })
        self.assertEqual(comps, [])
        self.assertIn(("seg::follow", "seg"), self.graph.edges)

    def test_super_between_siblings(self):
        comps = self.check({
            "lib.rs": "pub mod shed;\n",
            "shed/mod.rs": "pub mod layer;\npub mod telemetry;\n",
            "shed/layer.rs": "pub fn facts() { super::telemetry::count(); }\n",
            "shed/telemetry.rs": "use super::layer::facts;\npub fn count() {}\n",
        })
        self.assertEqual(comps, [["shed::layer", "shed::telemetry"]])

    def test_super_super_and_self(self):
        comps = self.check({
            "lib.rs": "pub mod a;\npub mod top;\n",
            "a/mod.rs": "pub mod b;\npub fn f() { self::b::g(); }\n",
            "a/b.rs": "pub fn g() { super::super::top::t(); }\n",
            "top.rs": "pub fn t() { crate::a::f(); }\n",
        })
        self.assertEqual(comps, [["a", "a::b", "top"]])

    def test_pub_use_reexport_is_not_an_edge(self):
        comps = self.check({
            "lib.rs": "pub mod r;\npub use r::S;\n",
            "r/mod.rs": (
                "pub mod s;\npub mod t;\n"
                "pub use s::S;\npub use self::t::{T, U as V};\npub(crate) use crate::r::t::W;\n"
                "pub struct R;\n"
            ),
            "r/s.rs": "use super::R;\npub struct S;\n",
            "r/t.rs": "use super::R;\npub struct T;\npub struct U;\npub struct W;\n",
        })
        self.assertEqual(comps, [])
        self.assertNotIn(("r", "r::s"), self.graph.edges)
        self.assertNotIn(("r", "r::t"), self.graph.edges)
        self.assertNotIn(("crate", "r"), self.graph.edges)

    def test_private_use_of_child_is_an_edge(self):
        comps = self.check({
            "lib.rs": "pub mod r;\n",
            "r/mod.rs": "mod s;\nuse s::S;\npub struct R(S);\n",
            "r/s.rs": "use super::R;\npub struct S;\n",
        })
        self.assertEqual(comps, [["r", "r::s"]])

    def test_reference_through_a_reexport_reaches_the_defining_module(self):
        comps = self.check({
            "lib.rs": "pub mod routes;\npub mod edge;\npub use routes::router;\n",
            "routes/mod.rs": "mod kinds;\npub use kinds::route_kind;\npub fn router() {}\n",
            "routes/kinds.rs": "pub fn route_kind() { crate::edge::layer(); }\n",
            "edge.rs": "pub fn layer() {}\nfn f() { crate::routes::route_kind(); crate::router(); }\n",
        })
        self.assertIn(("edge", "routes::kinds"), self.graph.edges)
        self.assertIn(("edge", "routes"), self.graph.edges)
        self.assertEqual(comps, [["edge", "routes::kinds"]])


class GroupedUse(CrateCase):
    def test_multi_line_group(self):
        comps = self.check({
            "lib.rs": "mod e;\nmod f;\nmod g;\n",
            "g.rs": (
                "use crate::{\n"
                "    e::E,\n"
                "    f::{\n"
                "        self,\n"
                "        F,\n"
                "    },\n"
                "};\n"
                "pub struct G;\n"
            ),
            "e.rs": "pub struct E;\nfn x(_: crate::g::G) {}\n",
            "f.rs": "pub struct F;\n",
        })
        self.assertEqual(comps, [["e", "g"]])
        self.assertEqual(self.edge("g", "e"), ("g.rs", 2, "crate::e::E"))
        self.assertEqual(self.edge("g", "f"), ("g.rs", 4, "crate::f"))
        self.assertEqual(len(self.graph.edges[("g", "f")]), 2)

    def test_alias_binding_in_code(self):
        comps = self.check({
            "lib.rs": "mod a;\nmod b;\n",
            "a.rs": "use crate::b as bee;\nfn x() { bee::f(); }\npub fn g() {}\n",
            "b.rs": "pub fn f() { crate::a::g(); }\n",
        })
        self.assertEqual(comps, [["a", "b"]])
        self.assertEqual([r[1] for r in self.graph.edges[("a", "b")]], [1, 2])


class TestModulesExcluded(CrateCase):
    def test_inline_cfg_test_module(self):
        comps = self.check({
            "lib.rs": "mod h;\nmod i;\n",
            "h.rs": (
                "pub struct H;\n"
                "#[cfg(test)]\n"
                "mod tests {\n"
                "    use crate::i::I;\n"
                "    #[test]\n"
                "    fn t() { let _ = crate::i::I; }\n"
                "}\n"
            ),
            "i.rs": "use crate::h::H;\npub struct I;\n",
        })
        self.assertEqual(comps, [])
        self.assertEqual(set(self.graph.edges), {("i", "h")})

    def test_cfg_test_module_in_a_file(self):
        comps = self.check({
            "lib.rs": "pub mod j;\npub mod k;\n",
            "j/mod.rs": "pub struct J;\n\n#[cfg(test)]\nmod tests;\n",
            "j/tests.rs": "use super::*;\nuse crate::k::K;\n",
            "k.rs": "use crate::j::J;\npub struct K;\n",
        })
        self.assertEqual(comps, [])
        self.assertNotIn("j::tests", self.graph.nodes)

    def test_cfg_test_items_and_cfg_doc_imports(self):
        comps = self.check({
            "lib.rs": "mod a;\nmod b;\n",
            "a.rs": (
                "#[cfg(test)]\nuse crate::b::B;\n"
                "#[cfg(doc)]\nuse crate::b::Doc;\n"
                "#[cfg(test)]\n#[allow(dead_code)]\nfn helper() -> [u8; 2] { crate::b::f(); [0; 2] }\n"
                "pub struct A;\n"
            ),
            "b.rs": "use crate::a::A;\n",
        })
        self.assertEqual(comps, [])

    def test_plain_inline_module_belongs_to_its_file(self):
        comps = self.check({
            "lib.rs": "mod a;\nmod b;\n",
            "a.rs": "pub mod inner {\n    pub fn f() { super::super::b::g(); }\n    fn h() { super::A; }\n}\npub struct A;\n",
            "b.rs": "pub fn g() { crate::a::inner::f(); }\n",
        })
        self.assertEqual(comps, [["a", "b"]])
        self.assertEqual(set(self.graph.edges), {("a", "b"), ("b", "a")})
        self.assertEqual(self.edge("a", "b"), ("a.rs", 2, "super::super::b::g"))


class ProseDoesNotCount(CrateCase):
    def test_comments_and_strings(self):
        comps = self.check({
            "lib.rs": "//! See [`crate::m::X`].\nmod l;\nmod m;\n",
            "l.rs": (
                "// uses crate::m::x\n"
                "/* crate::m::Y and /* nested crate::m */ still comment */\n"
                "/// Like [`crate::m::X`].\n"
                "//! crate::m\n"
                "pub fn f() -> &'static str {\n"
                "    let _c = '\"';\n"
                "    let _d = b'\\'';\n"
                "    let _s = \"crate::m::X \\\" crate::m::Y\";\n"
                "    let _r = r#\"a \"crate::m::Z\" b\"#;\n"
                "    let _b = br\"crate::m::W\";\n"
                "    \"crate::m\"\n"
                "}\n"
            ),
            "m.rs": "use crate::l::f;\npub struct X;\n",
        })
        self.assertEqual(comps, [])
        self.assertEqual(set(self.graph.edges), {("m", "l")})

    def test_lexer_stays_in_step_after_literals(self):
        comps = self.check({
            "lib.rs": "mod l;\nmod m;\n",
            "l.rs": (
                "fn f<'a>(x: &'a str) -> char {\n"
                "    let q = '\"';\n"
                "    let s = \"a // not a comment\";\n"
                "    crate::m::g();\n"
                "    q\n"
                "}\n"
            ),
            "m.rs": "pub fn g() {}\nfn h() { crate::l::f(\"\"); }\n",
        })
        self.assertEqual(comps, [["l", "m"]])
        self.assertEqual(self.edge("l", "m"), ("l.rs", 4, "crate::m::g"))

    def test_visibility_path_is_not_a_reference(self):
        comps = self.check({
            "lib.rs": "mod a;\nmod b;\n",
            "a.rs": "pub(in crate::a) fn f() {}\npub(crate) struct A;\n",
            "b.rs": "use crate::a::A;\n",
        })
        self.assertEqual(set(self.graph.edges), {("b", "a")})
        self.assertEqual(comps, [])


class TreeShape(CrateCase):
    def test_path_attribute_and_dollar_crate(self):
        comps = self.check({
            "lib.rs": '#[path = "weird/place.rs"]\nmod a;\nmod b;\n',
            "weird/place.rs": "macro_rules! m { () => { $crate::b::g() }; }\npub fn f() {}\n",
            "b.rs": "pub fn g() { crate::a::f(); }\n",
        })
        self.assertEqual(comps, [["a", "b"]])
        self.assertTrue(self.graph.edges[("a", "b")][0][0].endswith(os.path.join("weird", "place.rs")))

    def test_non_mod_rs_children(self):
        comps = self.check({
            "lib.rs": "pub mod a;\n",
            "a.rs": "pub mod b;\npub fn f() { b::g(); }\n",
            "a/b.rs": "pub fn g() { super::f(); }\n",
        })
        self.assertEqual(comps, [["a", "a::b"]])


class Command(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory()
        self.ws = self._tmp.name
        write_tree(self.ws, {
            "Cargo.toml": '[package]\nname = "rootpkg"\nversion = "0.1.0"\n\n[workspace]\nmembers = ["crates/*"]\n',
            "src/main.rs": "mod x;\nmod y;\nfn main() {}\n",
            "src/x.rs": "pub fn f() { crate::y::g(); }\n",
            "src/y.rs": "pub fn g() {}\n",
            "crates/clean/Cargo.toml": '[package]\nname = "clean"\nversion = "0.1.0"\n',
            "crates/clean/src/lib.rs": "pub mod p;\n",
            "crates/clean/src/p.rs": "pub fn p() {}\n",
            "crates/loopy/Cargo.toml": '[package]\nname = "loopy"\nversion = "0.1.0"\n',
            "crates/loopy/src/lib.rs": "mod a;\nmod b;\n",
            "crates/loopy/src/a.rs": "use crate::b::B;\npub struct A;\n",
            "crates/loopy/src/b.rs": "use crate::a::A;\npub struct B;\n",
            "crates/loopy/tests/it.rs": "use loopy::*;\n",
        })

    def tearDown(self):
        self._tmp.cleanup()

    def run_main(self, *args):
        out = io.StringIO()
        rc = mc.main([*args, self.ws], out=out)
        return rc, out.getvalue()

    def test_finds_root_and_member_crates(self):
        names = [c.name for c in mc.find_crates(self.ws)]
        self.assertEqual(names, ["rootpkg", "clean", "loopy"])

    def test_report_and_exit_code(self):
        rc, out = self.run_main()
        self.assertEqual(rc, 1)
        self.assertIn("clean (crates/clean/src/lib.rs): 2 modules, no cycles", out)
        self.assertIn("loopy (crates/loopy/src/lib.rs): 3 modules, 1 cycle", out)
        self.assertIn("a -> b  crates/loopy/src/a.rs:1  crate::b::B", out)
        self.assertEqual(out.splitlines()[-1], "module cycles: 1 in 1 crate")

    def test_one_crate_and_quiet(self):
        rc, out = self.run_main("--crate", "clean")
        self.assertEqual((rc, out.splitlines()[-1]), (0, "no module cycles"))
        rc, out = self.run_main("--crate", "loopy", "--quiet")
        self.assertEqual((rc, out), (1, "module cycles: 1 in 1 crate\n"))
        rc, out = self.run_main("--crate", "nope")
        self.assertEqual(rc, 2)


class FolderCycles(CrateCase):
    """Two folders whose files never import each other in a circle still form a folder
    cycle; the allow file lets today's edges pass and fails a new one."""

    FILES = {
        "lib.rs": "pub mod a;\npub mod b;\npub mod c;\n",
        "a/mod.rs": "pub mod x;\npub mod y;\n",
        "a/x.rs": "use crate::b::B;\n",
        "a/y.rs": "pub struct Y;\n",
        "b.rs": "use crate::a::y::Y;\npub struct B;\n",
        "c.rs": "use crate::a::y::Y;\n",
    }

    def test_folded_cycle(self):
        self.assertEqual(self.check(self.FILES), [])  # no file cycle
        inside, _, comps = mc.folder_cycle_edges(self.graph)
        self.assertEqual(comps, [["a", "b"]])
        self.assertEqual(inside, [("a", "b"), ("b", "a")])

    def run_folders(self, allow):
        write_tree(self.dir, {"src/" + k: v for k, v in self.FILES.items()})
        crate = mc.Crate("t", os.path.join(self.dir, "src", "lib.rs"))
        path = os.path.join(self.dir, "allow")
        with open(path, "w", encoding="utf-8") as f:
            f.write(allow)
        out = io.StringIO()
        return mc.check_folders([crate], self.dir, path, False, out), out.getvalue()

    def test_allow_file(self):
        rc, out = self.run_folders("t: a -> b\nt: b -> a\n")
        self.assertEqual(rc, 0, out)
        rc, out = self.run_folders("# only one\nt: a -> b\n")
        self.assertEqual(rc, 1)
        self.assertIn("new folder cycle edge: t: b -> a", out)
        rc, out = self.run_folders("t: a -> b\nt: b -> a\nt: c -> a\n")
        self.assertEqual(rc, 0)
        self.assertIn("allowed but gone (remove it from the allow file): t: c -> a", out)


if __name__ == "__main__":
    unittest.main()
