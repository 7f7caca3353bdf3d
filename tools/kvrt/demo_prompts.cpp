// SPDX-License-Identifier: MIT
// SPDX-FileCopyrightText: 2026 The kvrt authors

#include "demo_prompts.hpp"

#include "demo_document.hpp"

namespace kvrt_cli {

std::string demo_document() {
    std::string d(reinterpret_cast<const char*>(kDemoDocument), kDemoDocumentSize);
    while (!d.empty() && d.back() == '\n') d.pop_back();
    return d;
}

std::string edited_demo_document() {
    std::string d = demo_document();
    const std::string from = kBudgetSentence;
    const size_t at = d.find(from);
    if (at != std::string::npos) d.replace(at, from.size(), kEditedBudgetSentence);
    return d;
}

std::string demo_user_message(const std::string& doc, const char* question) { return doc + "\n\n" + question; }

std::string archive_document(const std::string& doc, int k) {
    return "Document " + std::to_string(k) + " of the project archive.\n\n" + doc;
}

}  // namespace kvrt_cli
