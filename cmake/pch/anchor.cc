// The one source of each precompiled-header target in cmake/Govern.cmake (govern_pch, govern_pch_pic,
// govern_pch_test): CMake compiles the header from the target's flags, which every target that reuses it
// shares. Nothing is defined here.
