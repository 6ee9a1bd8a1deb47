# Sourced by tools/build.sh and tools/sanitize.sh (not run on its own).
#
# reset_foreign_build_dir DIR
#   CMake refuses a build folder whose CMakeCache.txt was written for another source folder or in
#   another place ("The current CMakeCache.txt directory ... is different than the directory ...
#   where CMakeCache.txt was created", "The source ... does not match the source ... used to
#   generate cache"): a build/ copied from another checkout, or a checkout that was moved. Such a
#   folder holds only build products of the other place, so it is removed (with a one-line note)
#   and the caller configures it afresh. Both sides are resolved physically (pwd -P), so a checkout
#   reached through a symbolic link is still the same folder. A folder without a cache is left
#   alone. Run from the source folder.
reset_foreign_build_dir() {
  local dir=$1 cache=$1/CMakeCache.txt home cachedir
  [ -f "$cache" ] || return 0
  home=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$cache")
  cachedir=$(sed -n 's/^CMAKE_CACHEFILE_DIR:INTERNAL=//p' "$cache")
  if ! same_dir "$home" .; then
    echo "$dir: configured for ${home:-an unknown source folder} (not $(pwd -P)); removing it and configuring afresh" >&2
    rm -rf -- "$dir"
  elif ! same_dir "$cachedir" "$dir"; then
    # The source folder matches but the cache was written elsewhere: a checkout moved with its build/.
    echo "$dir: configured in ${cachedir:-an unknown folder} (this one is $(cd "$dir" && pwd -P)); removing it and configuring afresh" >&2
    rm -rf -- "$dir"
  fi
}

# same_dir A B: both exist and are the same folder once symbolic links are resolved.
same_dir() {
  [ -n "$1" ] && [ -d "$1" ] && [ -d "$2" ] && [ "$(cd "$1" && pwd -P)" = "$(cd "$2" && pwd -P)" ]
}
