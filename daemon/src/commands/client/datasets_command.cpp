// `trainingd datasets <verb>`: the daemon's datasets (docs/cli.md#datasets, docs/data.md).
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <random>

#include "commands/client/client.h"
#include "trainingd/api/dataset_json.h"
#include "trainingd/api/job_json.h"
#include "trainingd/api/strict_json.h"
#include "trainingd/daemon/commands/client_commands.h"

namespace trainingd::daemon {
// Named, not anonymous: the unity build compiles these files together, and the verbs share names.
namespace dataset_verbs {
using namespace client;  // NOLINT: this file is the client's
using nlohmann::json;

constexpr const char* kDatasetsUsage =
    "usage: trainingd datasets <verb> [flags]    (trainingd datasets <verb> --help)\n"
    "verbs:\n"
    "  upload FILE --name N   upload an npz or CSV file (streamed; checked whole by the daemon)\n"
    "  list                   the datasets\n"
    "  get NAME               one dataset\n"
    "  delete NAME            an uploaded dataset no queued or running job names\n";

// The table's columns, read from the API's Dataset object (DatasetFromJson reads only the
// record of an upload; a data root's directory has nulls where an upload has values).
struct DatasetRow {
  std::string name, format;
  std::vector<int64_t> shape;
  int64_t classes = 0, train = 0, test = 0, bytes = 0;
  double created_at = 0;
  std::string tasks;  // "classification,regression": the jobs its labels serve
};

engine::Result<DatasetRow> RowFromJson(const json& v) {
  namespace sj = api::strict_json;
  if (!v.is_object()) return sj::Bad("", "a dataset must be an object");
  DatasetRow r;
  const auto field = [&](const json& obj, const std::string& path, const char* key, auto* out) {
    const auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) return engine::Status::Ok();
    return sj::Read(*it, sj::Child(path, key), out);
  };
  TRAININGD_RETURN_IF_ERROR(sj::Require(v, "", "name"));
  TRAININGD_RETURN_IF_ERROR(field(v, "", "name", &r.name));
  TRAININGD_RETURN_IF_ERROR(field(v, "", "format", &r.format));
  TRAININGD_RETURN_IF_ERROR(field(v, "", "example_shape", &r.shape));
  TRAININGD_RETURN_IF_ERROR(field(v, "", "num_classes", &r.classes));
  TRAININGD_RETURN_IF_ERROR(field(v, "", "bytes", &r.bytes));
  TRAININGD_RETURN_IF_ERROR(field(v, "", "created_at", &r.created_at));
  std::vector<std::string> tasks;
  TRAININGD_RETURN_IF_ERROR(field(v, "", "tasks", &tasks));
  for (const std::string& t : tasks) r.tasks += (r.tasks.empty() ? "" : ",") + t;
  if (const auto it = v.find("splits"); it != v.end() && it->is_object()) {
    TRAININGD_RETURN_IF_ERROR(field(*it, "splits", "train", &r.train));
    TRAININGD_RETURN_IF_ERROR(field(*it, "splits", "test", &r.test));
  }
  return r;
}

std::string Shape(const DatasetRow& d) {
  std::string s;
  for (size_t i = 0; i < d.shape.size(); ++i) {
    if (i > 0) s += 'x';
    s += std::to_string(d.shape[i]);
  }
  return s.empty() ? "-" : s;
}

std::vector<std::string> Header() {
  return {"NAME", "FORMAT", "SHAPE", "CLASSES", "TASKS", "TRAIN", "TEST", "BYTES", "CREATED"};
}

std::vector<std::string> Row(const DatasetRow& d) {
  return {d.name,
          d.format,
          Shape(d),
          std::to_string(d.classes),
          d.tasks.empty() ? "-" : d.tasks,
          std::to_string(d.train),
          std::to_string(d.test),
          std::to_string(d.bytes),
          FormatTime(d.created_at)};
}

// A CSV's columns as `datasets get` shows them under the dataset: what the dashboard's datasets
// page shows too (docs/data.md#columns).
Table ColumnsTable(const json& columns) {
  const auto number = [](const json& c, const char* key) -> std::string {
    const auto it = c.find(key);
    if (it == c.end() || !it->is_number()) return "-";
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.4g", it->get<double>());
    return buf;
  };
  Table t{
      {"COLUMN", "TYPE", "MISSING", "MEAN", "STD", "MIN", "MAX", "LEVELS", "MOST FREQUENT", "NOTE"},
      {},
      -1};
  for (const json& c : columns) {
    if (!c.is_object()) continue;
    const std::string type = c.value("type", "");
    std::string top;
    if (const auto it = c.find("top_levels"); it != c.end() && it->is_array()) {
      for (size_t i = 0; i < it->size() && i < 3; ++i) {
        const json& l = (*it)[i];
        top += (i ? ", " : "") + l.value("value", "") + " (" +
               std::to_string(l.value("count", int64_t{0})) + ")";
      }
    }
    std::string note = c.value("dropped", "");
    if (!note.empty()) note = "dropped: " + note;
    if (note.empty()) note = c.value("note", "");
    if (const int64_t n = c.value("hash_buckets", int64_t{0}); n > 0) {
      note +=
          std::string(note.empty() ? "" : "; ") + "hashed into " + std::to_string(n) + " buckets";
    }
    if (c.value("missing_indicator", false)) {
      note += std::string(note.empty() ? "" : "; ") + "missing indicator";
    }
    const bool label = type == "label" || type == "ignored";  // nothing counted
    t.rows.push_back({c.value("name", ""), type + (c.value("typed_by_user", false) ? "*" : ""),
                      label ? "-" : std::to_string(c.value("missing", int64_t{0})),
                      number(c, "mean"), number(c, "std"), number(c, "min"), number(c, "max"),
                      c.contains("levels") ? std::to_string(c.value("levels", int64_t{0})) : "-",
                      top.empty() ? "-" : top, note.empty() ? "-" : note});
  }
  return t;
}

int PrintOne(const Client& c, const json& doc) {
  auto d = RowFromJson(doc);
  if (!d.ok()) return c.Fail({kExitFailed, "the daemon's answer: " + d.status().message()});
  return PrintObject(c, doc, d->name, {Header(), {Row(*d)}, -1});
}

int NeedName(const std::string& verb, const Flags& flags) {
  std::fprintf(stderr, "trainingd datasets %s: one dataset name needed\n%s", verb.c_str(),
               flags.Usage().c_str());
  return kExitUsage;
}

// A flag whose value may be empty ("--missing-values ''": no markers) and still be given.
Flags::Handler Set(std::optional<std::string>* out) {
  return [out](const std::string& value) -> std::optional<std::string> {
    *out = value;
    return std::nullopt;
  };
}

int Upload(const std::vector<std::string>& args) {
  ClientOptions o;
  std::vector<std::string> files;
  std::string name, format, label_column, normalize, test_file;
  std::optional<std::string> categorical, number, ignore, missing_values, impute, missing_indicator,
      hash_buckets;
  std::optional<double> test_fraction;
  std::optional<int64_t> split_seed, max_levels;
  Flags flags("datasets upload", "FILE --name N",
              "Uploads an npz (Keras's mnist.npz layout) or a CSV file, streamed from disk; the\n"
              "daemon checks it whole before keeping it (docs/data.md#uploading). A progress\n"
              "line on stderr when stderr is a terminal.\n");
  flags.Positionals("file", 1, &files)
      .String("--name", "N", "the dataset's name (required): 1-100 of A-Z a-z 0-9 . _ -", &name)
      .String("--format", "F", "npz or csv (from the file's extension)", &format)
      .String("--label-column", "C", "csv: the column of the labels (label)", &label_column)
      .Positive("--test-fraction", "csv: the share split off as the test split (0.2)",
                &test_fraction)
      .Int("--split-seed", "csv: the seed of that split (0)", 0, INT64_MAX, &split_seed)
      .String("--normalize", "HOW", "tables: none or standard (none)", &normalize)
      .String("--test-file", "F", "csv: the test rows in a file of their own (multipart)",
              &test_file)
      .Add("--categorical", "COLS", "csv: columns typed categorical (comma-separated)",
           Set(&categorical))
      .Add("--number", "COLS", "csv: columns typed number (comma-separated)", Set(&number))
      .Add("--ignore", "COLS", "csv: columns left out (comma-separated)", Set(&ignore))
      .Add("--missing-values", "M",
           "csv: missing-value markers besides an empty cell (NA,NaN,?,null)", Set(&missing_values))
      .Add("--impute", "HOW",
           "csv: a missing number becomes the train split's mean or median "
           "(mean)",
           Set(&impute))
      .Add("--missing-indicator", "COLS",
           "csv: number columns that get a 0/1 \"was missing\" feature (comma-separated; * for "
           "every one)",
           Set(&missing_indicator))
      .Add("--hash-buckets", "COL:N",
           "csv: categorical columns hashed into N buckets, allowed past --max-levels "
           "(comma-separated, e.g. city:1024)",
           Set(&hash_buckets))
      .Int("--max-levels", "csv: the most distinct values of a categorical column (10000)", 1,
           1000000, &max_levels);
  AddClientFlags(flags, &o);
  return WithClient("datasets upload", flags, o, args, [&](Client& c) -> int {
    if (files.size() != 1 || name.empty()) {
      std::fprintf(stderr, "trainingd datasets upload: %s\n%s",
                   files.size() != 1 ? "no file given" : "--name: required", flags.Usage().c_str());
      return kExitUsage;
    }
    if (format.empty()) {
      const std::string ext = std::filesystem::path(files[0]).extension().string();
      format = ext == ".csv" ? "csv" : ext == ".npz" ? "npz" : "";
      if (format.empty()) return c.Fail({kExitUsage, "--format: required (npz or csv)"});
    }
    std::string target = "/api/v1/datasets?name=" + Encode(name) + "&format=" + Encode(format);
    if (!label_column.empty()) target += "&label_column=" + Encode(label_column);
    if (test_fraction) target += "&test_fraction=" + std::to_string(*test_fraction);
    if (split_seed) target += "&split_seed=" + std::to_string(*split_seed);
    if (!normalize.empty()) target += "&normalize=" + Encode(normalize);
    for (const auto& [key, value] : {std::pair{"categorical", &categorical},
                                     {"number", &number},
                                     {"ignore", &ignore},
                                     {"missing_values", &missing_values},
                                     {"impute", &impute},
                                     {"missing_indicator", &missing_indicator},
                                     {"hash_buckets", &hash_buckets}}) {
      if (*value) target += std::string("&") + key + "=" + Encode(**value);
    }
    if (max_levels) target += "&max_levels=" + std::to_string(*max_levels);
    std::vector<api::BodyPart> parts;
    std::string content_type = "application/octet-stream";
    if (test_file.empty()) {
      parts.push_back({"", files[0]});
    } else {
      std::mt19937_64 rng(std::random_device{}());
      const std::string boundary = "trainingd-" + std::to_string(rng());
      content_type = "multipart/form-data; boundary=" + boundary;
      const auto head = [&](const char* part, const std::string& file, bool first) {
        return std::string(first ? "" : "\r\n") + "--" + boundary +
               "\r\nContent-Disposition: form-data; name=\"" + part + "\"; filename=\"" +
               std::filesystem::path(file).filename().string() +
               "\"\r\nContent-Type: text/csv\r\n\r\n";
      };
      parts.push_back({head("train", files[0], true), ""});
      parts.push_back({"", files[0]});
      parts.push_back({head("test", test_file, false), ""});
      parts.push_back({"", test_file});
      parts.push_back({"\r\n--" + boundary + "--\r\n", ""});
    }
    auto last = std::chrono::steady_clock::now();
    const auto progress = [&](int64_t sent, int64_t total) {
      if (!c.stderr_tty()) return;
      const auto now = std::chrono::steady_clock::now();
      if (sent < total && now - last < std::chrono::milliseconds(100)) return;
      last = now;
      std::fprintf(stderr, "\r\033[Kuploading %s: %.1f / %.1f MB (%d%%)", name.c_str(), sent / 1e6,
                   total / 1e6, total > 0 ? static_cast<int>(100 * sent / total) : 100);
      if (sent == total) std::fprintf(stderr, "; the daemon is checking it...");
    };
    auto reply = c.http().Upload(target, content_type, parts, progress);
    if (c.stderr_tty()) std::fprintf(stderr, "\r\033[K");
    if (!reply.ok()) {
      Failure f = Client::FromStatus(reply.status());
      if (reply.status().code() == engine::StatusCode::kIoError) f.exit_code = kExitUsage;
      return c.Fail(f);
    }
    if (reply->status / 100 != 2) return c.Fail(Client::FromReply(*reply, true));
    auto doc = json::parse(reply->body, nullptr, false);
    if (doc.is_discarded()) return c.Fail({kExitFailed, "the daemon's answer is not JSON"});
    return PrintOne(c, doc);
  });
}

int List(const std::vector<std::string>& args) {
  ClientOptions o;
  Flags flags("datasets list", "", "The uploads and the data root's directories.\n");
  AddClientFlags(flags, &o);
  return WithClient("datasets list", flags, o, args, [&](Client& c) -> int {
    Failure f;
    auto doc = c.Call("GET", "/api/v1/datasets", &f);
    if (!doc) return c.Fail(f);
    const json& items = (*doc)["datasets"];
    if (c.mode() == OutputMode::kJson || c.mode() == OutputMode::kJsonl) {
      PrintJson(*doc, items, c.mode());
      return 0;
    }
    Table t{Header(), {}, -1};
    for (const auto& item : items) {
      auto d = RowFromJson(item);
      if (!d.ok()) return c.Fail({kExitFailed, "the daemon's answer: " + d.status().message()});
      if (c.mode() == OutputMode::kQuiet) {
        std::printf("%s\n", d->name.c_str());
      } else {
        t.rows.push_back(Row(*d));
      }
    }
    if (c.mode() != OutputMode::kQuiet) PrintTable(c, t);
    return 0;
  });
}

int Get(const std::vector<std::string>& args) {
  ClientOptions o;
  std::vector<std::string> names;
  Flags flags("datasets get", "NAME", "One dataset; -o json has everything the daemon keeps.\n");
  flags.Positionals("dataset name", 1, &names);
  AddClientFlags(flags, &o);
  return WithClient("datasets get", flags, o, args, [&](Client& c) -> int {
    if (names.size() != 1) return NeedName("get", flags);
    Failure f;
    auto doc = c.Call("GET", "/api/v1/datasets/" + Encode(names[0]), &f);
    if (!doc) return c.Fail(f);
    const int status = PrintOne(c, *doc);
    const auto columns = doc->find("columns");
    if (status != 0 || c.mode() != OutputMode::kTable || columns == doc->end() ||
        !columns->is_array()) {
      return status;
    }
    std::printf("\n");
    PrintTable(c, ColumnsTable(*columns));
    return 0;
  });
}

int Delete(const std::vector<std::string>& args) {
  ClientOptions o;
  std::vector<std::string> names;
  bool yes = false;
  Flags flags("datasets delete", "NAME",
              "Deletes an uploaded dataset (409 while a queued or running job names it). Asks\n"
              "first on a terminal; elsewhere needs --yes.\n");
  flags.Positionals("dataset name", 1, &names).Switch("--yes", "do not ask", &yes);
  AddClientFlags(flags, &o);
  return WithClient("datasets delete", flags, o, args, [&](Client& c) -> int {
    if (names.size() != 1) return NeedName("delete", flags);
    return DeleteResource(c, "/api/v1/datasets/" + Encode(names[0]), names[0],
                          "dataset " + names[0], yes);
  });
}

}  // namespace dataset_verbs

int DatasetsCommand(const std::vector<std::string>& args) {
  static const std::map<std::string, client::Verb> kVerbs = {{"upload", dataset_verbs::Upload},
                                                             {"list", dataset_verbs::List},
                                                             {"get", dataset_verbs::Get},
                                                             {"delete", dataset_verbs::Delete}};
  return client::RunVerb("datasets", kVerbs, dataset_verbs::kDatasetsUsage, args);
}

}  // namespace trainingd::daemon
