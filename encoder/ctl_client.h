// SPDX-License-Identifier: Apache-2.0
//===-- encoder/ctl_client.h - `gotrace ctl`: talk to a traced process ----===//
#pragma once

#include <string>

namespace gotrace {

// Sends `command` (start, stop, snapshot, status) to traced process `pid`
// through its control socket (preload/control.cc) and returns its one-line
// answer in *reply. False with a sentence for the user in *error when the
// process cannot be reached (no such process, no control channel, another
// user's, no answer within `timeout_s`).
bool CtlRequest(int pid, const std::string& command, int timeout_s, std::string* reply,
                std::string* error);

// `gotrace ctl PID COMMAND`: exit 0 when the process answered "ok", 1 when
// it answered an error or could not be reached, 2 for a usage error.
int CmdCtl(int argc, char** argv);

}  // namespace gotrace
