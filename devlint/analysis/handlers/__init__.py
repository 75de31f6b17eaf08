"""What the analysis knows about each API, as data: registries of small handlers.

A call the interpreter cannot see into (a torch function, a tensor method, a
builtin) is answered by the handlers its name is registered under, as pytype's
overlays map a member name to the code that models it.  Each handler takes one
explicit `ApiCall` (the call's node, its argument values, the caller's state and
the evaluator's services) and returns the call's abstract value, or None to let
the next handler for that name answer.  Adding a torch fact is one table entry
in `torch_api` (or one handler here) and one fixture.

Modules: `registry` (the mechanism), `torch_functions`, `tensor_methods`,
`module_methods`, `builtins` (the registries).
"""
