// wick/sdk/ops.hpp — the printable name of every op code, for messages and reports; read from the
// op table (wick/wick_ops.h through wick/sdk/op_table.hpp), where every op is declared once.
#pragma once

#include <wick/sdk/op_table.hpp>
