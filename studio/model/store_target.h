// Where the studio stores the runs it makes (Apply, hand edits), headless. The file the
// user opened is never written unless asked: new runs go to a side file beside it,
// NAME.studio.db (NAME.studio-2.db, ... when one exists that holds other runs; in the
// temporary directory when the opened file's folder cannot be written), made as a copy
// of the open trace (so every run keeps its id) when the first run is stored; the studio
// then reads the side file. A side file opened again goes on being written; a
// NAME.studio.db from an earlier session that starts with the open trace's runs is
// written again, its runs reappearing. With StudioState::write_into_input, runs go into
// the opened trace.db itself, after checking that it can be written.
#pragma once

#include <string>

namespace mpk::studio {

struct StudioState;

// True for a file named *.studio.db (a side file the studio wrote).
bool is_side_trace(const std::string& path);

// `input` with its extension replaced by `suffix` ("graph.mpk", ".studio.db" ->
// "graph.studio.db"), in its folder when that can be written, else in the temporary
// directory.
std::string side_path(const std::string& input, const std::string& suffix);

// The trace.db new runs go to, made ready: the open trace when it is a side file, or
// when write_into_input is set (checked writable); otherwise the side file, copied from
// the open trace and opened in its place on first use. Throws mpk::Error saying why no
// run can be stored (a read-only trace with write_into_input, no writable place).
std::string prepare_store(StudioState& s);

// One line for the UI: where new runs go ("new runs go to trace.studio.db").
std::string store_description(const StudioState& s);

}  // namespace mpk::studio
