# Build-time script: writes a C++ file holding the text of runtime/device/*.cuh so that
# the runtime can compile the megakernel wherever the binary runs.
# Inputs: -DOUT=<file.cc> -DROOT=<source dir> -DFILES=<;-separated absolute paths>
set(_body "// Generated from runtime/device/*.cuh by codegen/embed_sources.cmake; do not edit.\n")
string(APPEND _body "#include \"codegen/device_sources.h\"\n\nnamespace mpk {\n\n")
string(APPEND _body "const std::vector<DeviceSource>& device_sources() {\n")
string(APPEND _body "  static const std::vector<DeviceSource> sources = {\n")
foreach(_f ${FILES})
  file(READ ${_f} _text)
  file(RELATIVE_PATH _rel ${ROOT} ${_f})
  string(APPEND _body "    {\"${_rel}\", R\"mpk_embed(${_text})mpk_embed\"},\n")
endforeach()
string(APPEND _body "  };\n  return sources;\n}\n\n}  // namespace mpk\n")
file(WRITE ${OUT}.tmp "${_body}")
file(COPY_FILE ${OUT}.tmp ${OUT} ONLY_IF_DIFFERENT)
