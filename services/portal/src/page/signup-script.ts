import { createHash } from "node:crypto";

// The proof-of-work solver the browser runs, served as a file
// (`GET /subscribe/signup.js`): the portal's check page loads it (its CSP
// allows scripts of its own origin only, nothing inline), and an account may
// load it on its own page to do the work there. SHA-256 is written out here
// rather than taken from crypto.subtle, which exists only in secure contexts
// (an http portal in development has none) and costs a promise per try.
// The script does what `solveChallenge` of domain/proof-of-work.ts does.

export const SIGNUP_SCRIPT = `(function () {
  "use strict";
  var K = [
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2
  ];
  var W = new Array(64);
  function hex(n) { return ("00000000" + (n >>> 0).toString(16)).slice(-8); }
  // SHA-256 of an ASCII string (the salt and a number are ASCII), as lower-case hex.
  function sha256(text) {
    var length = text.length, words = [], i;
    for (i = 0; i < length; i++) words[i >> 2] |= (text.charCodeAt(i) & 0xff) << (24 - (i % 4) * 8);
    words[length >> 2] |= 0x80 << (24 - (length % 4) * 8);
    var total = (((length + 8) >> 6) + 1) * 16;
    for (i = words.length; i < total; i++) words[i] = words[i] | 0;
    words[total - 1] = length * 8;
    var h0 = 0x6a09e667, h1 = 0xbb67ae85, h2 = 0x3c6ef372, h3 = 0xa54ff53a, h4 = 0x510e527f, h5 = 0x9b05688c, h6 = 0x1f83d9ab, h7 = 0x5be0cd19;
    for (var block = 0; block < total; block += 16) {
      var a = h0, b = h1, c = h2, d = h3, e = h4, f = h5, g = h6, h = h7, t;
      for (t = 0; t < 64; t++) {
        if (t < 16) W[t] = words[block + t] | 0;
        else {
          var w15 = W[t - 15], w2 = W[t - 2];
          var s0 = ((w15 >>> 7) | (w15 << 25)) ^ ((w15 >>> 18) | (w15 << 14)) ^ (w15 >>> 3);
          var s1 = ((w2 >>> 17) | (w2 << 15)) ^ ((w2 >>> 19) | (w2 << 13)) ^ (w2 >>> 10);
          W[t] = (W[t - 16] + s0 + W[t - 7] + s1) | 0;
        }
        var S1 = ((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7));
        var ch = (e & f) ^ (~e & g);
        var t1 = (h + S1 + ch + K[t] + W[t]) | 0;
        var S0 = ((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10));
        var maj = (a & b) ^ (a & c) ^ (b & c);
        var t2 = (S0 + maj) | 0;
        h = g; g = f; f = e; e = (d + t1) | 0; d = c; c = b; b = a; a = (t1 + t2) | 0;
      }
      h0 = (h0 + a) | 0; h1 = (h1 + b) | 0; h2 = (h2 + c) | 0; h3 = (h3 + d) | 0;
      h4 = (h4 + e) | 0; h5 = (h5 + f) | 0; h6 = (h6 + g) | 0; h7 = (h7 + h) | 0;
    }
    return hex(h0) + hex(h1) + hex(h2) + hex(h3) + hex(h4) + hex(h5) + hex(h6) + hex(h7);
  }
  // Tries the numbers in slices, so that the page stays responsive; done(-1) when none fits.
  function solve(challenge, done) {
    var n = 0;
    (function slice() {
      var end = Math.min(n + 5000, challenge.maxnumber + 1);
      for (; n < end; n++) if (sha256(challenge.salt + n) === challenge.challenge) return done(n);
      if (n > challenge.maxnumber) return done(-1);
      setTimeout(slice, 0);
    })();
  }
  function solution(challenge, number) {
    var json = JSON.stringify({ algorithm: challenge.algorithm, salt: challenge.salt, challenge: challenge.challenge, number: number, signature: challenge.signature });
    return btoa(json).replace(/\\+/g, "-").replace(/\\//g, "_").replace(/=+$/, "");
  }
  function setProof(form, value) {
    var input = form.querySelector('input[name="pow"]');
    if (!input) {
      input = document.createElement("input");
      input.type = "hidden";
      input.name = "pow";
      form.appendChild(input);
    }
    input.value = value;
  }
  var submit = HTMLFormElement.prototype.submit;
  // The portal's check page: the challenge came with it.
  var check = document.querySelector("form[data-emailsvc-challenge]");
  if (check) {
    var challenge = JSON.parse(check.getAttribute("data-emailsvc-challenge"));
    solve(challenge, function (number) {
      if (number >= 0) setProof(check, solution(challenge, number));
      submit.call(check);
    });
    return;
  }
  // An account's page: the challenge is fetched when the form is sent.
  var forms = document.querySelectorAll("form[data-emailsvc-signup]");
  Array.prototype.forEach.call(forms, function (form) {
    form.addEventListener("submit", function (event) {
      var given = form.querySelector('input[name="pow"]');
      if (given && given.value) return;
      event.preventDefault();
      fetch(form.action + "/challenge", { headers: { accept: "application/json" } })
        .then(function (response) {
          if (!response.ok) throw new Error("no challenge");
          return response.json();
        })
        .then(function (challenge) {
          solve(challenge, function (number) {
            if (number >= 0) setProof(form, solution(challenge, number));
            submit.call(form);
          });
        })
        // Without a challenge the post goes as it is, and the portal's check page does the work.
        .catch(function () { submit.call(form); });
    });
  });
})();
`;

/** Its ETag: the script changes only with a release. */
export const SIGNUP_SCRIPT_ETAG = `"${createHash("sha256").update(SIGNUP_SCRIPT).digest("base64url").slice(0, 22)}"`;
