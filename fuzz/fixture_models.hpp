// The committed fixture models (tests/fixtures/model/) the fuzz targets run, loaded once per
// process. A fixture that does not load is a broken checkout, not a finding: the process aborts.
#pragma once

#include <cstdlib>
#include <initializer_list>
#include <string>
#include <vector>

#include "model/model.hpp"

inline std::vector<sf::Model> load_fixture_models(std::initializer_list<const char*> names) {
  std::vector<sf::Model> out;
  for (const char* name : names) {
    sf::Model m;
    if (!sf::Model::load_file(std::string(SF_FIXTURE_DIR) + "/model/" + name + ".safetensors", &m).ok()) std::abort();
    out.push_back(std::move(m));
  }
  return out;
}
