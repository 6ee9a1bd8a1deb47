#include "io/safetensors.hpp"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>

#include <nlohmann/json.hpp>

namespace sf {

namespace {

struct DtypeEntry {
  const char* name;
  Dtype dtype;
  std::size_t size;
};
constexpr DtypeEntry kDtypes[] = {
    {"BOOL", Dtype::kBool, 1}, {"U8", Dtype::kU8, 1},   {"I8", Dtype::kI8, 1},
    {"U16", Dtype::kU16, 2},   {"I16", Dtype::kI16, 2}, {"U32", Dtype::kU32, 4},
    {"I32", Dtype::kI32, 4},   {"U64", Dtype::kU64, 8}, {"I64", Dtype::kI64, 8},
    {"F16", Dtype::kF16, 2},   {"BF16", Dtype::kBF16, 2}, {"F32", Dtype::kF32, 4},
    {"F64", Dtype::kF64, 8},
};

Status bad(const std::string& m) { return {ErrorCode::kBadFormat, "safetensors: " + m}; }

// What a file that is not safetensors looks like, from its first bytes ("" when nothing
// recognisable): leading whitespace and a UTF-8 byte-order mark skipped, case ignored.
std::string looks_like(const std::vector<std::uint8_t>& bytes) {
  std::size_t i = 0;
  if (bytes.size() >= 3 && bytes[0] == 0xEF && bytes[1] == 0xBB && bytes[2] == 0xBF) i = 3;
  while (i < bytes.size() && (bytes[i] == ' ' || bytes[i] == '\t' || bytes[i] == '\r' || bytes[i] == '\n')) ++i;
  const auto starts = [&](const char* word) {
    std::size_t k = 0;
    for (; word[k]; ++k)
      if (i + k >= bytes.size() || std::tolower(bytes[i + k]) != word[k]) return false;
    return true;
  };
  if (starts("<!doctype html") || starts("<html") || starts("<head") || starts("<body"))
    return "it looks like an HTML page (a wrong URL, or a dev server that answers a missing file with its index page)";
  if (starts("<?xml") || starts("<svg")) return "it looks like an XML or SVG document";
  if (starts("{") || starts("[")) return "it looks like a JSON document (a safetensors file starts with an 8-byte header length)";
  if (starts("pk\x03\x04")) return "it looks like a ZIP archive (a PyTorch .pt/.pth checkpoint is one: convert it with safetensors.torch.save_file)";
  return "";
}

template <class T>
T load_le(const std::uint8_t* p) {  // little-endian load of an unaligned value
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

Status parse_entry(const std::string& name, const nlohmann::json& e, TensorInfo* t) {
  if (!e.is_object()) return bad("entry '" + name + "' is not an object");
  const auto dt = e.find("dtype"), sh = e.find("shape"), off = e.find("data_offsets");
  if (dt == e.end() || sh == e.end() || off == e.end() || !dt->is_string() || !sh->is_array() ||
      !off->is_array() || off->size() != 2)
    return bad("entry '" + name + "' needs dtype, shape and data_offsets [begin, end]");
  const std::string dname = dt->get<std::string>();
  const auto* entry = std::find_if(std::begin(kDtypes), std::end(kDtypes),
                                   [&](const DtypeEntry& d) { return dname == d.name; });
  if (entry == std::end(kDtypes)) return bad("tensor '" + name + "' has unknown dtype " + dname);
  t->dtype = entry->dtype;
  std::uint64_t count = 1;
  for (const auto& d : *sh) {
    if (!d.is_number_unsigned()) return bad("tensor '" + name + "' has a non-integer dimension");
    const std::uint64_t n = d.get<std::uint64_t>();
    if (n != 0 && count > std::numeric_limits<std::uint64_t>::max() / n)
      return bad("tensor '" + name + "' shape overflows");
    count *= n;
    t->shape.push_back(static_cast<std::int64_t>(n));
  }
  if (!(*off)[0].is_number_unsigned() || !(*off)[1].is_number_unsigned())
    return bad("tensor '" + name + "' has non-integer data_offsets");
  const std::uint64_t b = (*off)[0].get<std::uint64_t>(), en = (*off)[1].get<std::uint64_t>();
  if (en < b) return bad("tensor '" + name + "' has data_offsets end before begin");
  if (count > std::numeric_limits<std::uint64_t>::max() / entry->size)
    return bad("tensor '" + name + "' byte size overflows");
  if (en - b != count * entry->size)
    return bad("tensor '" + name + "' spans " + std::to_string(en - b) + " bytes but its shape and " +
               dname + " need " + std::to_string(count * entry->size));
  t->begin = static_cast<std::size_t>(b);
  t->end = static_cast<std::size_t>(en);
  return Status::Ok();
}

}  // namespace

const char* dtype_name(Dtype d) {
  for (const auto& e : kDtypes)
    if (e.dtype == d) return e.name;
  return "?";
}

std::int64_t TensorInfo::numel() const {
  std::int64_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

float half_to_float(std::uint16_t h) {
  const std::uint32_t sign = (h & 0x8000u) << 16;
  std::uint32_t exp = (h >> 10) & 0x1Fu, mant = h & 0x3FFu, bits;
  if (exp == 0x1F) {
    bits = sign | 0x7F800000u | (mant << 13);  // inf / nan
  } else if (exp != 0) {
    bits = sign | ((exp + 112) << 23) | (mant << 13);  // rebias 15 -> 127
  } else if (mant == 0) {
    bits = sign;  // +-0
  } else {        // subnormal half: normalise
    exp = 113;
    while (!(mant & 0x400u)) {
      mant <<= 1;
      --exp;
    }
    bits = sign | (exp << 23) | ((mant & 0x3FFu) << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

float bfloat16_to_float(std::uint16_t b) {
  const std::uint32_t bits = static_cast<std::uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

Status SafetensorsFile::read(const std::string& path, SafetensorsFile* out) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return {ErrorCode::kIo, "cannot open " + path};
  std::vector<std::uint8_t> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  Status s = parse(std::move(bytes), out);
  if (!s.ok()) return {s.code(), s.message() + " (" + path + ")"};
  return s;
}

Status SafetensorsFile::parse(std::vector<std::uint8_t> bytes, SafetensorsFile* out) {
  // A file whose first 8 bytes cannot be a header length, or whose header is not a JSON object,
  // is some other file: most often an HTML page (a wrong URL, or a dev server answering a missing
  // path with its index page). Said in those words, rather than as a 19-digit header length.
  const std::uint64_t n = bytes.size() >= 8 ? load_le<std::uint64_t>(bytes.data()) : 0;
  const bool sized = bytes.size() >= 8 && n <= kPlausibleHeaderBytes && n <= bytes.size() - 8;
  if (!sized || n == 0 || bytes[8] != '{') {
    const std::string kind = looks_like(bytes);
    if (!kind.empty()) return bad("not a safetensors file: " + kind);
    if (bytes.size() < 8) return bad("not a safetensors file: it has " + std::to_string(bytes.size()) + " bytes, fewer than the 8 of a header length");
    if (!sized)
      return bad("not a safetensors file: its first 8 bytes give a header length of " + std::to_string(n) +
                 ", more than the file's " + std::to_string(bytes.size()) + " bytes" +
                 (n > kPlausibleHeaderBytes ? " (or than 100,000,000)" : ""));
    return bad("not a safetensors file: its header does not start with '{'");
  }
  if (n > kMaxHeaderBytes) return bad("header length " + std::to_string(n) + " exceeds " + std::to_string(kMaxHeaderBytes) + " bytes");
  const char* hb = reinterpret_cast<const char*>(bytes.data() + 8);
  const nlohmann::json header = nlohmann::json::parse(hb, hb + n, nullptr, /*allow_exceptions=*/false);
  if (header.is_discarded() || !header.is_object()) return bad("header is not a JSON object");

  SafetensorsFile file;
  std::vector<std::pair<std::size_t, std::string>> order;
  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == "__metadata__") {
      if (!it->is_object()) return bad("__metadata__ is not an object");
      for (auto m = it->begin(); m != it->end(); ++m) {
        if (!m->is_string()) return bad("__metadata__['" + m.key() + "'] is not a string");
        file.metadata_[m.key()] = m->get<std::string>();
      }
      continue;
    }
    TensorInfo t;
    SF_RETURN_IF_ERROR(parse_entry(it.key(), *it, &t));
    order.emplace_back(t.begin, it.key());
    file.tensors_.emplace(it.key(), std::move(t));
  }
  // Sorted by begin, the tensors must tile the buffer exactly: no gap, no overlap, no tail.
  std::sort(order.begin(), order.end());
  std::size_t expected = 0;
  for (const auto& [begin, name] : order) {
    const TensorInfo& t = file.tensors_.at(name);
    if (t.begin != expected)
      return bad("tensor '" + name + "' starts at byte " + std::to_string(t.begin) + ", expected " + std::to_string(expected) + " (offsets must be contiguous from 0)");
    expected = t.end;
  }
  const std::size_t buffer = bytes.size() - 8 - static_cast<std::size_t>(n);
  if (expected != buffer)
    return bad("tensors cover " + std::to_string(expected) + " bytes but the data buffer has " + std::to_string(buffer));

  file.data_start_ = 8 + static_cast<std::size_t>(n);
  file.bytes_ = std::move(bytes);
  *out = std::move(file);
  return Status::Ok();
}

const TensorInfo* SafetensorsFile::find(const std::string& name) const {
  const auto it = tensors_.find(name);
  return it == tensors_.end() ? nullptr : &it->second;
}

Status SafetensorsFile::lookup(const std::string& name, const TensorInfo** info) const {
  *info = find(name);
  if (!*info) return {ErrorCode::kMissingTensor, "safetensors: no tensor named '" + name + "'"};
  return Status::Ok();
}

namespace {
Status unsupported(const std::string& name, Dtype d, const char* want) {
  return {ErrorCode::kUnsupportedDtype, "safetensors: tensor '" + name + "' is " + dtype_name(d) +
                                            ", which cannot be read as " + want};
}
}  // namespace

Status SafetensorsFile::get_f32(const std::string& name, std::vector<float>* out) const {
  const TensorInfo* t;
  SF_RETURN_IF_ERROR(lookup(name, &t));
  const std::size_t n = static_cast<std::size_t>(t->numel());
  const std::uint8_t* p = data(*t);
  out->resize(n);
  switch (t->dtype) {
    case Dtype::kF32: std::memcpy(out->data(), p, n * 4); break;
    case Dtype::kF16: for (std::size_t i = 0; i < n; ++i) (*out)[i] = half_to_float(load_le<std::uint16_t>(p + 2 * i)); break;
    case Dtype::kBF16: for (std::size_t i = 0; i < n; ++i) (*out)[i] = bfloat16_to_float(load_le<std::uint16_t>(p + 2 * i)); break;
    default: return unsupported(name, t->dtype, "float32");
  }
  return Status::Ok();
}

Status SafetensorsFile::get_f64(const std::string& name, std::vector<double>* out) const {
  const TensorInfo* t;
  SF_RETURN_IF_ERROR(lookup(name, &t));
  const std::size_t n = static_cast<std::size_t>(t->numel());
  const std::uint8_t* p = data(*t);
  out->resize(n);
  switch (t->dtype) {
    case Dtype::kF64: std::memcpy(out->data(), p, n * 8); break;
    case Dtype::kF32: for (std::size_t i = 0; i < n; ++i) (*out)[i] = load_le<float>(p + 4 * i); break;
    default: return unsupported(name, t->dtype, "float64");
  }
  return Status::Ok();
}

Status SafetensorsFile::get_i32(const std::string& name, std::vector<std::int32_t>* out) const {
  const TensorInfo* t;
  SF_RETURN_IF_ERROR(lookup(name, &t));
  const std::size_t n = static_cast<std::size_t>(t->numel());
  const std::uint8_t* p = data(*t);
  out->resize(n);
  switch (t->dtype) {
    case Dtype::kI32: std::memcpy(out->data(), p, n * 4); break;
    case Dtype::kU8:
    case Dtype::kBool: for (std::size_t i = 0; i < n; ++i) (*out)[i] = p[i]; break;
    case Dtype::kI64:
      for (std::size_t i = 0; i < n; ++i) {
        const std::int64_t v = load_le<std::int64_t>(p + 8 * i);
        if (v < std::numeric_limits<std::int32_t>::min() || v > std::numeric_limits<std::int32_t>::max())
          return {ErrorCode::kIndexOutOfRange, "safetensors: tensor '" + name + "' holds " + std::to_string(v) + ", outside int32"};
        (*out)[i] = static_cast<std::int32_t>(v);
      }
      break;
    default: return unsupported(name, t->dtype, "int32");
  }
  return Status::Ok();
}

}  // namespace sf
