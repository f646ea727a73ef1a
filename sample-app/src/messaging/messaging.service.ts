import { Injectable } from '@nestjs/common';
import { HttpService } from '@nestjs/axios';
import { firstValueFrom } from 'rxjs';

export interface SendMessageInput {
  to: string;
  text: string;
}

/**
 * Calls the platform through the module's authenticated HttpService: relative URLs resolve against the platform
 * base URL and carry a bearer token; nothing here knows about tokens.
 *
 * The path is the emulator's placeholder: the real messaging path is not published.
 */
@Injectable()
export class MessagingService {
  constructor(private readonly http: HttpService) {}

  async sendMessage(input: SendMessageInput): Promise<unknown> {
    const response = await firstValueFrom(this.http.post('/api/messages', input));
    return response.data;
  }
}
